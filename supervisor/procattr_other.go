//go:build !linux

package supervisor

import "os/exec"

// setProcAttr does nothing where there is no Pdeathsig: the child's own
// parent check is then what ends it when the supervisor dies.
func setProcAttr(*exec.Cmd) {}
