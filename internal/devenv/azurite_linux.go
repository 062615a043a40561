package devenv

import "syscall"

// azuriteProcAttr makes the kernel kill Azurite when the process that
// started it dies, so a crashed test run leaves no emulator behind.
func azuriteProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
