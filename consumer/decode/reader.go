package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the nesting limit of encoding/json, kept so that both accept
// the same documents.
const maxDepth = 10000

// parser reads one JSON document (RFC 8259) the way encoding/json does with
// UseNumber: numbers become json.Number with their exact text, strings are
// unescaped with invalid UTF-8 and lone surrogates replaced by U+FFFD, and
// the last of duplicate keys wins. It accepts exactly what json.Valid
// accepts; decode_test.go and fuzz_test.go check both against encoding/json.
type parser struct {
	s     string
	i     int
	depth int
	// max is the nesting limit; maxDepth when zero.
	max int
	// pending is the set of columns (below maxConverted) to which the
	// visit gave a JSON value to convert afterwards; a column below
	// maxConverted that holds a value and is not in it was converted as
	// it was read (capture). A column may be in it and hold nil (a
	// duplicate key reset it, or its path led nowhere).
	pending [maxConverted / 64]uint64
	// box holds the boxes of the values capture converts; nil boxes them
	// as Go does.
	box *cells
}

// setPending records that column col holds a JSON value, not yet
// converted.
func (p *parser) setPending(col int) {
	if col < maxConverted {
		p.pending[col/64] |= 1 << (col % 64)
	}
}

// maxConverted bounds the columns the reader converts as it reads them;
// wider tables convert the rest after the visit, as before.
const maxConverted = 256

// errTooDeep is the error of a document nested deeper than the decoder's
// limit.
var errTooDeep = errors.New("nested deeper than the limit")

// errorf makes a syntax error that names the offset in the payload.
func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.i}, args...)...)
}

func (p *parser) unexpected(what string) error {
	if p.i >= len(p.s) {
		return p.errorf("unexpected end of JSON input %s", what)
	}
	return p.errorf("invalid character %q %s", p.s[p.i], what)
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end checks that only whitespace follows the document.
func (p *parser) end() error {
	p.ws()
	if p.i != len(p.s) {
		return p.unexpected("after top-level value")
	}
	return nil
}

// document builds the whole document.
func (p *parser) document() (any, error) {
	p.ws()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	return v, p.end()
}

// visitDocument fills row[c] for the captures of the trie rooted at root.
func (p *parser) visitDocument(root *node, row []any) error {
	p.ws()
	var err error
	if len(root.captures) == 0 && p.i < len(p.s) && p.s[p.i] == '{' {
		// The usual document: row is all null already, so nothing to reset.
		err = p.walk(visit, root, row, nil)
	} else {
		err = p.member(root, row)
	}
	if err != nil {
		return err
	}
	return p.end()
}

// member reads the value at p.i for the trie node n (nil when no plain
// path goes through it): at a capturing node it builds the value and
// evaluates the captures' rest on it; at another node it descends into an
// object; everything else it validates without building.
func (p *parser) member(n *node, row []any) error {
	switch {
	case n == nil:
		return p.skip()
	case n.direct != nil:
		return p.capture(n.direct, row)
	case len(n.captures) > 0:
		v, err := p.value()
		if err != nil {
			return err
		}
		for _, c := range n.captures {
			row[c.col] = evalPath(c.rest, v)
			p.setPending(c.col)
		}
		return nil
	}
	// As in encoding/json, the last occurrence of a key wins whole: a
	// duplicate resets what an earlier one filled.
	for _, s := range n.slots {
		row[s] = nil
	}
	if p.i < len(p.s) && p.s[p.i] == '{' {
		return p.walk(visit, n, row, nil)
	}
	// A field of a non-object is null.
	return p.skip()
}

// capture reads the value at p.i for the column of c, whose path ends
// here. A string or a number is converted to the column's type as it is
// read (the row then holds one boxed value, not the JSON value and then
// its conversion); a value that does not convert, and any other JSON
// value, is stored as the JSON value for Convert, which makes the same
// error or conversion as for every other column.
func (p *parser) capture(c *capture, row []any) error {
	bit := uint64(1) << (c.col % 64)
	word := &p.pending[c.col/64]
	if p.i < len(p.s) {
		switch ch := p.s[p.i]; {
		case ch == '"':
			s, err := p.str()
			if err != nil {
				return err
			}
			if v, reason := c.conv.scalar(s, p.box); reason == "" {
				row[c.col] = v
				*word &^= bit
				return nil
			}
			row[c.col] = s
			*word |= bit
			return nil
		case ch == '-' || (ch >= '0' && ch <= '9'):
			t, err := p.number()
			if err != nil {
				return err
			}
			if v, reason := c.conv.scalar(json.Number(t), p.box); reason == "" {
				row[c.col] = v
				*word &^= bit
				return nil
			}
			row[c.col] = json.Number(t)
			*word |= bit
			return nil
		}
	}
	v, err := p.value()
	if err != nil {
		return err
	}
	row[c.col] = v
	*word |= bit
	return nil
}

// walkMode is what walk does with each member of an object or array.
type walkMode uint8

const (
	// build builds the value (value).
	build walkMode = iota
	// validate checks the grammar without building anything (skip).
	validate
	// visit descends through the trie of plain paths (member); objects
	// only.
	visit
)

// walk reads the object or array at p.i (its opening byte) and does with
// each member what mode says; in build mode it sets *out to the
// map[string]any or []any. It is the one loop over objects and arrays.
// The mode is a switch rather than a function value: a walker calling a
// function value per member was 15 to 28 % slower.
func (p *parser) walk(mode walkMode, n *node, row []any, out *any) error {
	obj := p.s[p.i] == '{'
	closing := byte(']')
	if obj {
		closing = '}'
	}
	if err := p.open(); err != nil {
		return err
	}
	// What only some modes use stays in memory, not in registers: Go
	// saves no register across a call, so every value live in the loop is
	// reloaded after each member, and skipping pays for none of these.
	w := walkState{n: n, row: row}
	if mode == build {
		if obj {
			w.m = map[string]any{}
		} else {
			w.a = []any{}
		}
	}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == closing {
		p.i++
		p.depth--
		if mode == build {
			*out = w.built()
		}
		return nil
	}
	for {
		var key string
		var err error
		if obj {
			// The key, the colon and the whitespace around them, read here
			// rather than in a function: skipping is the hot loop of wide
			// documents. Validating does not unescape the key.
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return p.unexpected("looking for beginning of object key string")
			}
			if mode == validate {
				err = p.skipString()
			} else {
				key, err = p.str()
			}
			if err != nil {
				return err
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return p.unexpected("after object key")
			}
			p.i++
			p.ws()
		}
		switch mode {
		case build:
			var v any
			if v, err = p.value(); err == nil {
				if obj {
					w.m[key] = v
				} else {
					w.a = append(w.a, v)
				}
			}
		case validate:
			err = p.skip()
		case visit:
			// Most keys are not on a path: skip them without a call more.
			if child := w.n.keys.find(key); child == nil {
				err = p.skip()
			} else {
				err = p.member(child, w.row)
			}
		}
		if err != nil {
			return err
		}
		if done, err := p.next(closing); err != nil {
			return err
		} else if done {
			if mode == build {
				*out = w.built()
			}
			return nil
		}
	}
}

// walkState is what walk keeps for the modes that use it: the trie node
// and the row of visit, the object or array of build.
type walkState struct {
	n   *node
	row []any
	m   map[string]any
	a   []any
}

// built is walk's result in build mode: the object or the array.
func (w *walkState) built() any {
	if w.m != nil {
		return w.m
	}
	return w.a
}

func (p *parser) open() error {
	p.i++
	p.depth++
	if p.max > 0 && p.depth > p.max {
		return fmt.Errorf("offset %d: %w (%d levels)", p.i, errTooDeep, p.max)
	}
	if p.depth > maxDepth {
		return p.errorf("exceeded max depth")
	}
	return nil
}

// next reads the comma or the closing byte after an element; done is set
// after the closing byte.
func (p *parser) next(closing byte) (done bool, err error) {
	p.ws()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			p.ws()
			return false, nil
		case closing:
			p.i++
			p.depth--
			return true, nil
		}
	}
	if closing == '}' {
		return false, p.unexpected("after object key:value pair")
	}
	return false, p.unexpected("after array element")
}

// value builds the value at p.i.
func (p *parser) value() (any, error) {
	if p.i >= len(p.s) {
		return nil, p.unexpected("looking for beginning of value")
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		var v any
		err := p.walk(build, nil, nil, &v)
		return v, err
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := p.number()
		if err != nil {
			return nil, err
		}
		return json.Number(n), nil
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected("looking for beginning of value")
}

// skip validates the value at p.i without building it.
func (p *parser) skip() error {
	if p.i >= len(p.s) {
		return p.unexpected("looking for beginning of value")
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		return p.walk(validate, nil, nil, nil)
	case c == '"':
		return p.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := p.number()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.unexpected("looking for beginning of value")
}

func (p *parser) literal(word string) error {
	for k := 0; k < len(word); k++ {
		if p.i >= len(p.s) || p.s[p.i] != word[k] {
			return p.unexpected("in literal " + word)
		}
		p.i++
	}
	return nil
}

// number reads a number per the JSON grammar and returns its text.
func (p *parser) number() (string, error) {
	start := p.i
	s := p.s
	i := p.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.i = i
		return "", p.unexpected("in numeric literal")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			p.i = i
			return "", p.unexpected("after decimal point in numeric literal")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			p.i = i
			return "", p.unexpected("in exponent of numeric literal")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	p.i = i
	return s[start:i], nil
}

// str reads a string at p.i (an opening quote). A string without escapes
// and with valid UTF-8 is returned as a substring, without copying.
func (p *parser) str() (string, error) {
	s := p.s
	i := p.i + 1
	for i < len(s) {
		if i+8 <= len(s) {
			// Eight bytes at a time up to the first one to look at.
			if k := special8(s, i, true); k == 8 {
				i += 8
				continue
			} else {
				i += k
			}
		}
		c := s[i]
		if c == '"' {
			out := s[p.i+1 : i]
			p.i = i + 1
			return out, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
			continue
		}
		i++
	}
	return p.strSlow(i)
}

// strSlow unescapes the rest of a string from i, as encoding/json does.
func (p *parser) strSlow(i int) (string, error) {
	s := p.s
	b := make([]byte, 0, len(s)-p.i)
	b = append(b, s[p.i+1:i]...)
	for {
		if i >= len(s) {
			p.i = i
			return "", p.unexpected("in string literal")
		}
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(b), nil
		case c == '\\':
			if i+1 >= len(s) {
				p.i = i + 1
				return "", p.unexpected("in string escape code")
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				i += 2
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
				i += 2
			case 'u':
				r := hex4(s, i+2)
				if r < 0 {
					p.i = i + 2
					return "", p.unexpected("in \\u hexadecimal character escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair combines only when the next escape is its
					// other half; otherwise the first becomes U+FFFD and
					// the next escape is read on its own.
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if r2 := hex4(s, i+2); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								b = utf8.AppendRune(b, dec)
								i += 6
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			default:
				p.i = i + 1
				return "", p.unexpected("in string escape code")
			}
		case c < 0x20:
			p.i = i
			return "", p.unexpected("in string literal")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
}

// skipString validates a string at p.i without unescaping it.
func (p *parser) skipString() error {
	s := p.s
	i := p.i + 1
	for i < len(s) {
		if i+8 <= len(s) {
			if k := special8(s, i, false); k == 8 {
				i += 8
				continue
			} else {
				i += k
			}
		}
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(s) {
				p.i = i + 1
				return p.unexpected("in string escape code")
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(s, i+2) < 0 {
					p.i = i + 2
					return p.unexpected("in \\u hexadecimal character escape")
				}
				i += 6
			default:
				p.i = i + 1
				return p.unexpected("in string escape code")
			}
		case c < 0x20:
			p.i = i
			return p.unexpected("in string literal")
		default:
			i++
		}
	}
	p.i = i
	return p.unexpected("in string literal")
}

// special8 returns the index (0 to 7) of the first of the 8 bytes at
// s[i:] that a string's reader must look at: a quote, a backslash, a
// control character, or, when high is set, a byte of a multi-byte UTF-8
// sequence; 8 when there is none. Strings of the wide events are 40 to
// 140 bytes, which a byte at a time took most of the reader's time for.
//
// Each test flags the bytes of a word below a bound (x - n*lo sets the
// top bit of a byte under n, &^ x drops bytes that had it set already);
// a borrow can flag a byte wrongly only above one rightly flagged, so
// the lowest flag is always exact.
func special8(s string, i int, high bool) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	m := (q - lo) &^ q
	m |= (b - lo) &^ b
	m |= (x - lo*0x20) &^ x
	if high {
		m |= x
	}
	return bits.TrailingZeros64(m&hi) / 8
}

// hex4 returns the value of the 4 hex digits at s[i:], or -1.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		d := hex4digit(c)
		if d < 0 {
			return -1
		}
		r = r*16 + d
	}
	return r
}

func hex4digit(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}
