package supervisor

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the child when the supervisor dies,
// and keeps it in the supervisor's process group so that a terminal's
// Ctrl-C reaches it too (the child ignores it; the supervisor drains it).
//
// Pdeathsig fires when the thread that started the child exits, not the
// process. The Go runtime does not end its threads while the process runs
// (no goroutine here locks one), so in practice it fires on the
// supervisor's death; the child's own parent check covers the rest.
func setProcAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = false
}
