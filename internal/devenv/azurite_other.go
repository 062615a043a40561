//go:build !linux

package devenv

import "syscall"

// azuriteProcAttr has nothing to add where the kernel has no parent-death
// signal: Stop is then the only way Azurite ends.
func azuriteProcAttr() *syscall.SysProcAttr { return nil }
