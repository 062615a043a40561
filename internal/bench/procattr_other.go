//go:build !linux

package bench

import "os/exec"

// setProcAttr does nothing where there is no Pdeathsig; the benchmark
// reads /proc, so it only measures on Linux anyway.
func setProcAttr(*exec.Cmd) {}
