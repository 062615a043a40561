package decode

import (
	"encoding/json"
	"strconv"
)

// pathSeg is one step of a plain path: a field name, or an index when
// isIndex is set (negative indexes count from the end, as in JMESPath).
type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

// parsePlainPath recognises the JMESPath expressions that are plain paths:
// identifiers (bare or double-quoted) joined by dots, each optionally
// followed by [N] indexes, with no spaces. They are evaluated by map
// lookups; anything else is left to go-jmespath.
func parsePlainPath(expr string) ([]pathSeg, bool) {
	var segs []pathSeg
	i := 0
	for {
		// An identifier.
		switch {
		case i < len(expr) && expr[i] == '"':
			j := i + 1
			for j < len(expr) && expr[j] != '"' {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, false
			}
			var key string
			if err := json.Unmarshal([]byte(expr[i:j+1]), &key); err != nil {
				return nil, false
			}
			segs = append(segs, pathSeg{key: key})
			i = j + 1
		case i < len(expr) && isIdentStart(expr[i]):
			j := i + 1
			for j < len(expr) && isIdentPart(expr[j]) {
				j++
			}
			segs = append(segs, pathSeg{key: expr[i:j]})
			i = j
		default:
			return nil, false
		}
		// Indexes.
		for i < len(expr) && expr[i] == '[' {
			j := i + 1
			if j < len(expr) && expr[j] == '-' {
				j++
			}
			ds := j
			for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			if j == ds || j >= len(expr) || expr[j] != ']' || (expr[ds] == '0' && j-ds > 1) || j-ds > 9 {
				return nil, false
			}
			n, err := strconv.Atoi(expr[i+1 : j])
			if err != nil {
				return nil, false
			}
			segs = append(segs, pathSeg{index: n, isIndex: true})
			i = j + 1
		}
		if i == len(expr) {
			return segs, true
		}
		if expr[i] != '.' {
			return nil, false
		}
		i++
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

// evalPath evaluates a plain path with JMESPath semantics: a field of a
// non-object, an index of a non-array or an index out of range is null.
func evalPath(path []pathSeg, v any) any {
	for _, s := range path {
		if s.isIndex {
			a, ok := v.([]any)
			if !ok {
				return nil
			}
			i := s.index
			if i < 0 {
				i += len(a)
			}
			if i < 0 || i >= len(a) {
				return nil
			}
			v = a[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[s.key]
	}
	return v
}
