package bench

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the ingestor's supervisor when the
// benchmark dies (its own children follow it the same way), and puts it in
// a process group of its own, so that a terminal's Ctrl-C reaches only the
// benchmark, which then stops the ingestor in order.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
