package testutil

import (
	"fmt"
	"os"
	"strings"
)

// Alive reports whether process pid runs: it exists and is neither a
// zombie nor dead (Linux /proc). A killed child that its parent has not
// reaped yet is not alive.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}
