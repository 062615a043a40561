package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// refRE matches a reference to a secret kept outside the file:
// ${env:NAME} or ${file:/path}.
var refRE = regexp.MustCompile(`\$\{(env|file):([^}]+)\}`)

// expand replaces every ${env:NAME} with the environment variable NAME and
// every ${file:PATH} with the content of the file at PATH (without a
// trailing newline), so that no secret has to be written into the
// configuration file. Errors name the variable or file, never a value.
func expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var err error
	out := refRE.ReplaceAllStringFunc(s, func(ref string) string {
		m := refRE.FindStringSubmatch(ref)
		switch m[1] {
		case "env":
			v, ok := os.LookupEnv(m[2])
			if !ok && err == nil {
				err = fmt.Errorf("environment variable %s is not set", m[2])
			}
			return v
		default:
			b, rerr := os.ReadFile(m[2])
			if rerr != nil && err == nil {
				err = fmt.Errorf("read secret file %s: %w", m[2], rerr)
			}
			return strings.TrimRight(string(b), "\r\n")
		}
	})
	return out, err
}
