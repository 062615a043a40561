package consumer

// size: pending the move of the decoder into its own package (issue 15,
// "The house"), which splits this file by concept.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/jmespath/go-jmespath"
)

// Row is one decoded record: one value per top-level field of the table
// schema, in schema order; nil is null. Values have these Go types:
//
//	string                 string
//	int                    int32
//	long                   int64
//	float                  float32
//	double                 float64
//	boolean                bool
//	date                   arrow.Date32 (days since 1970-01-01)
//	time                   arrow.Time64 (microseconds since midnight)
//	timestamp, timestamptz arrow.Timestamp (microseconds since the epoch, UTC)
//	timestamp_ns(tz)       arrow.Timestamp (nanoseconds since the epoch, UTC)
//	decimal(P,S)           decimal128.Num (the unscaled value)
//	binary, fixed[L]       []byte
//	uuid                   uuid.UUID (github.com/google/uuid)
//	struct                 []any, one value per struct field in order
//	list                   []any
//	map                    MapValue
//
// Nested values follow the same table, and nil is null at every level.
type Row []any

// MapValue is the Row representation of an Iceberg map: Keys[i] maps to
// Values[i]. Keys are never nil; a JSON object gives its entries sorted by
// key.
type MapValue struct {
	Keys   []any
	Values []any
}

// Reasons a record does not decode, as DecodeError.Reason; they are bounded,
// so they can label metrics.
const (
	// ReasonNotJSON: the payload is not one JSON value.
	ReasonNotJSON = "not_json"
	// ReasonTooLarge: the payload is over ingestion.maxRecordBytes.
	ReasonTooLarge = "too_large"
	// ReasonTooDeep: the payload nests deeper than ingestion.maxJSONDepth.
	ReasonTooDeep = "too_deep"
	// ReasonConvert: a value does not convert to its column's type, or a
	// general JMESPath expression fails on the document (a function given
	// the wrong type).
	ReasonConvert = "convert"
	// ReasonMissingRequired: a required column is missing or null.
	ReasonMissingRequired = "missing_required"
)

// DecodeError tells why a payload does not decode into a Row.
type DecodeError struct {
	// Reason is one of the Reason constants.
	Reason string
	// Column is the top-level column at fault; empty when the payload as a
	// whole is at fault (not JSON, too large, too deep).
	// A nested path (user.address.zip, tags[3]) is in Err's message.
	Column string
	// Err is the underlying error.
	Err error
}

// Error gives the reason, the column and the offending value, truncated.
func (e *DecodeError) Error() string {
	switch e.Reason {
	case ReasonNotJSON:
		return "decode payload: not JSON: " + e.Err.Error()
	case ReasonTooLarge:
		return "decode payload: too large: " + e.Err.Error()
	case ReasonTooDeep:
		return "decode payload: " + e.Err.Error()
	case ReasonMissingRequired:
		return fmt.Sprintf("decode column %q: required value is missing or null", e.Column)
	}
	return fmt.Sprintf("decode column %q: %v", e.Column, e.Err)
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Decoder maps JSON payloads to Rows of one table schema through the
// dataset's customMapping. It is safe for concurrent use.
//
// Each column's expression selects a JSON value, which converts to the
// column's type as follows (anything else is a ReasonConvert error, never a
// silent null or a rounded value):
//
//	string            a string; a number as its JSON text (under
//	                  go-jmespath, the shortest text of its value); true/false
//	int, long         an integer number or numeric string ("42"), range
//	                  checked; 1e3 and 42.0 are integers, 1.5 is an error
//	float, double     a number or numeric string; also the strings NaN,
//	                  Inf, Infinity with an optional sign, in any case
//	boolean           true/false or the strings "true"/"false"
//	date              "YYYY-MM-DD", or an RFC 3339 timestamp (its UTC date)
//	time              "HH:MM:SS[.ffffff]"
//	timestamp(tz)     an RFC 3339 string (T, t or space between date and
//	                  time; Z or ±HH:MM, or no zone meaning UTC; a date alone
//	                  is midnight; digits below the column's unit are cut),
//	                  or a number of epoch milliseconds; stored as UTC
//	decimal(P,S)      a number or numeric string, exactly: more than P
//	                  digits, or a non-zero digit beyond S fraction digits,
//	                  is an error
//	binary, fixed[L]  a base64 string (standard or URL alphabet, padded or
//	                  not); fixed needs exactly L bytes
//	uuid              the canonical 36-character string
//	struct            an object; fields by name, unknown keys ignored
//	list              an array
//	map               an object; keys convert to the key type like strings
//
// A missing or null value is null in an optional place and an error in a
// required one: ReasonMissingRequired for a top-level column, ReasonConvert
// naming the nested path (user.address.zip, tags[3]) inside a value.
//
// Expressions that are plain paths (a.b, "quoted key".c, a.b[0]) are
// evaluated by map lookups; when all of them are, the payload is read in
// one pass that builds only the selected values. Other expressions run on
// go-jmespath over the whole document, where numbers that a float64 holds
// exactly are float64 (so comparisons and functions work) and the others
// stay exact.
type Decoder struct {
	maxBytes int
	maxDepth int
	cols     []column
	// general is set when some expression runs through go-jmespath, whose
	// arithmetic and comparisons only know float64 numbers. The whole
	// document is then built.
	general bool
	// root is the trie of plain paths, set when there is no general
	// expression.
	root *node
}

// column is one top-level field of the schema and how to fill it.
type column struct {
	name     string
	required bool
	conv     *converter
	// path is set when the expression is a plain path evaluated by map
	// lookups; expr is used otherwise.
	path []pathSeg
	expr *jmespath.JMESPath
}

// NewDecoder compiles mapping (column name -> JMESPath expression) for
// schema. Every key must be a top-level column; a column without an
// expression is always null, so it must be optional. Types without a JSON
// representation (variant, geometry, geography, unknown) are rejected.
func NewDecoder(schema *iceberg.Schema, mapping map[string]string) (*Decoder, error) {
	fields := schema.Fields()
	for _, name := range slices.Sorted(maps.Keys(mapping)) {
		if !slices.ContainsFunc(fields, func(f iceberg.NestedField) bool { return f.Name == name }) {
			return nil, fmt.Errorf("mapping names column %q, which is not a top-level column of the table", name)
		}
	}
	d := &Decoder{cols: make([]column, len(fields))}
	for i, f := range fields {
		conv, err := newConverter(f.Type, f.Name)
		if err != nil {
			return nil, err
		}
		col := column{name: f.Name, required: f.Required, conv: conv}
		expr, ok := mapping[f.Name]
		if !ok {
			if f.Required {
				return nil, fmt.Errorf("required column %q has no mapping", f.Name)
			}
			d.cols[i] = col
			continue
		}
		// Every expression goes through go-jmespath once, so that a plain
		// path is also a valid one.
		jp, err := jmespath.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("compile mapping of column %q (%q): %w", f.Name, expr, err)
		}
		if path, ok := parsePlainPath(expr); ok {
			col.path = path
		} else {
			col.expr = jp
			d.general = true
		}
		d.cols[i] = col
	}
	if !d.general {
		d.root = buildTrie(d.cols)
	}
	return d, nil
}

// Limit sets the largest payload in bytes and the deepest nesting the
// decoder accepts; larger payloads are dropped with ReasonTooLarge, deeper
// ones with ReasonTooDeep. Zero leaves a limit off (encoding/json's 10000
// levels still apply). Call it before the first Decode.
func (d *Decoder) Limit(maxBytes, maxDepth int) {
	d.maxBytes, d.maxDepth = maxBytes, maxDepth
}

func syntaxError(err error) *DecodeError {
	if errors.Is(err, errTooDeep) {
		return &DecodeError{Reason: ReasonTooDeep, Err: err}
	}
	return &DecodeError{Reason: ReasonNotJSON, Err: err}
}

// Decode parses one JSON payload and converts it to a Row. The error is
// always a *DecodeError.
func (d *Decoder) Decode(payload []byte) (Row, error) {
	return d.DecodeInto(nil, payload)
}

// DecodeInto is Decode writing into dst when it has room for the row, so
// a caller that is done with each row before the next (the segment writer
// copies the values into Arrow builders) allocates no Row per record. The
// returned Row is dst resliced, or a new one when dst is too small.
func (d *Decoder) DecodeInto(dst Row, payload []byte) (Row, error) {
	// One copy of the payload; every unescaped string and every number in
	// the row is a substring of it.
	if d.maxBytes > 0 && len(payload) > d.maxBytes {
		return nil, &DecodeError{Reason: ReasonTooLarge, Err: fmt.Errorf("%d bytes, over the limit of %d", len(payload), d.maxBytes)}
	}
	p := parser{s: string(payload), max: d.maxDepth}
	var row Row
	if cap(dst) >= len(d.cols) {
		row = dst[:len(d.cols)]
		clear(row)
	} else {
		row = make(Row, len(d.cols))
	}
	if d.root != nil {
		// Only plain paths: one pass that materializes only the mapped
		// values and validates the rest without building it.
		if err := p.visitDocument(d.root, row); err != nil {
			return nil, syntaxError(err)
		}
	} else {
		doc, err := p.document()
		if err != nil {
			return nil, syntaxError(err)
		}
		if d.general {
			doc = floatNumbers(doc)
		}
		for i := range d.cols {
			c := &d.cols[i]
			switch {
			case c.path != nil:
				row[i] = evalPath(c.path, doc)
			case c.expr != nil:
				v, err := c.expr.Search(doc)
				if err != nil {
					return nil, &DecodeError{Reason: ReasonConvert, Column: c.name, Err: fmt.Errorf("evaluate mapping: %w", err)}
				}
				row[i] = v
			}
		}
	}
	// row holds the JSON values; convert them in place.
	for i := range d.cols {
		c := &d.cols[i]
		v := row[i]
		if v == nil {
			if c.required {
				return nil, &DecodeError{Reason: ReasonMissingRequired, Column: c.name, Err: errMissing}
			}
			continue
		}
		cv, err := c.conv.convert(v)
		if err != nil {
			if ce, ok := err.(*convertError); ok && len(ce.path) > 0 {
				ce.path = append(ce.path, c.name)
			}
			return nil, &DecodeError{Reason: ReasonConvert, Column: c.name, Err: err}
		}
		row[i] = cv
	}
	return row, nil
}

var errMissing = errors.New("required value is missing or null")

// floatNumbers replaces, in place, every json.Number that a float64 holds
// exactly (its shortest float64 text has the same decimal value) with that
// float64, so that go-jmespath comparisons and functions see numbers. Other
// numbers (big integers, long decimals) stay json.Number and keep every
// digit; go-jmespath can still select them, but not compare them.
func floatNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if f, ok := exactFloat(string(v)); ok {
			return f
		}
	case map[string]any:
		for k, e := range v {
			switch e.(type) {
			case json.Number, map[string]any, []any:
				v[k] = floatNumbers(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = floatNumbers(e)
		}
	}
	return v
}

// exactFloat returns the float64 of a JSON number when it represents the
// number's decimal value without loss.
func exactFloat(s string) (float64, bool) {
	p, ok := splitNumber(s)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	if p.fracDigits == "" && p.exp == 0 && len(p.intDigits) <= 15 {
		return f, true
	}
	var buf [32]byte
	q, ok := splitNumber(string(strconv.AppendFloat(buf[:0], f, 'e', -1, 64)))
	return f, ok && sameDecimal(p, q)
}

// sameDecimal tells whether two numbers have the same decimal value.
func sameDecimal(a, b numParts) bool {
	af, al, ap, aok := a.sig()
	bf, bl, bp, bok := b.sig()
	if !aok || !bok {
		return aok == bok
	}
	if a.neg != b.neg || ap != bp || al-af != bl-bf {
		return false
	}
	for i := 0; i <= al-af; i++ {
		if a.digit(af+i) != b.digit(bf+i) {
			return false
		}
	}
	return true
}

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

// node is one object level of the plain paths of a Decoder. At a node with
// captures the whole value is built and each capture's column takes
// evalPath(rest, value); otherwise the parser descends into the object
// through children and skips every other key without building its value.
type node struct {
	children map[string]*node
	captures []capture
	// slots lists the columns at or below this node, which a duplicate key
	// resets: as in encoding/json, the last occurrence of a key wins whole.
	slots []int
}

type capture struct {
	col  int
	rest []pathSeg
}

// buildTrie builds the trie of the plain paths of cols. A path descends
// through its leading field names; at its first index, or at its end, it
// captures. A node that captures for one path captures for every path
// through it, since its value is built anyway.
func buildTrie(cols []column) *node {
	root := &node{}
	for i := range cols {
		c := &cols[i]
		if c.path == nil {
			continue
		}
		n := root
		k := 0
		for k < len(c.path) && !c.path[k].isIndex {
			if n.children == nil {
				n.children = map[string]*node{}
			}
			child := n.children[c.path[k].key]
			if child == nil {
				child = &node{}
				n.children[c.path[k].key] = child
			}
			n = child
			k++
		}
		n.captures = append(n.captures, capture{col: i, rest: c.path[k:]})
	}
	root.finish()
	return root
}

// finish folds the subtrees of capturing nodes into their captures and
// fills in slots.
func (n *node) finish() {
	if len(n.captures) > 0 && len(n.children) > 0 {
		n.captures = append(n.captures, n.flatten()...)
		n.children = nil
	}
	n.slots = n.slots[:0]
	for _, c := range n.captures {
		n.slots = append(n.slots, c.col)
	}
	for _, child := range n.children {
		child.finish()
		n.slots = append(n.slots, child.slots...)
	}
}

// flatten returns the captures below n with their paths made relative to n.
func (n *node) flatten() []capture {
	var out []capture
	for key, child := range n.children {
		for _, c := range child.captures {
			out = append(out, capture{col: c.col, rest: append([]pathSeg{{key: key}}, c.rest...)})
		}
		for _, c := range child.flatten() {
			out = append(out, capture{col: c.col, rest: append([]pathSeg{{key: key}}, c.rest...)})
		}
	}
	return out
}

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
}

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
	switch {
	case len(root.captures) > 0:
		// Not made by parsePlainPath, which starts every path with a name.
		var v any
		if v, err = p.value(); err == nil {
			for _, c := range root.captures {
				row[c.col] = evalPath(c.rest, v)
			}
		}
	case p.i < len(p.s) && p.s[p.i] == '{':
		err = p.visitObject(root, row)
	default:
		err = p.skip()
	}
	if err != nil {
		return err
	}
	return p.end()
}

func (p *parser) visitObject(n *node, row []any) error {
	if err := p.open(); err != nil {
		return err
	}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return nil
	}
	for {
		key, err := p.key()
		if err != nil {
			return err
		}
		child := n.children[key]
		switch {
		case child == nil:
			err = p.skip()
		case len(child.captures) > 0:
			var v any
			if v, err = p.value(); err == nil {
				for _, c := range child.captures {
					row[c.col] = evalPath(c.rest, v)
				}
			}
		default:
			for _, s := range child.slots {
				row[s] = nil
			}
			if p.i < len(p.s) && p.s[p.i] == '{' {
				err = p.visitObject(child, row)
			} else {
				// A field of a non-object is null.
				err = p.skip()
			}
		}
		if err != nil {
			return err
		}
		if done, err := p.next('}'); done || err != nil {
			return err
		}
	}
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

// key reads an object key, the colon and the whitespace after it.
func (p *parser) key() (string, error) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", p.unexpected("looking for beginning of object key string")
	}
	key, err := p.str()
	if err != nil {
		return "", err
	}
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != ':' {
		return "", p.unexpected("after object key")
	}
	p.i++
	p.ws()
	return key, nil
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
	case c == '{':
		if err := p.open(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			p.depth--
			return m, nil
		}
		for {
			key, err := p.key()
			if err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			m[key] = v
			if done, err := p.next('}'); err != nil {
				return nil, err
			} else if done {
				return m, nil
			}
		}
	case c == '[':
		if err := p.open(); err != nil {
			return nil, err
		}
		a := []any{}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			p.depth--
			return a, nil
		}
		for {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if done, err := p.next(']'); err != nil {
				return nil, err
			} else if done {
				return a, nil
			}
		}
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
	case c == '{':
		if err := p.open(); err != nil {
			return err
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			p.depth--
			return nil
		}
		for {
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return p.unexpected("looking for beginning of object key string")
			}
			if err := p.skipString(); err != nil {
				return err
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return p.unexpected("after object key")
			}
			p.i++
			p.ws()
			if err := p.skip(); err != nil {
				return err
			}
			if done, err := p.next('}'); done || err != nil {
				return err
			}
		}
	case c == '[':
		if err := p.open(); err != nil {
			return err
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			p.depth--
			return nil
		}
		for {
			if err := p.skip(); err != nil {
				return err
			}
			if done, err := p.next(']'); done || err != nil {
				return err
			}
		}
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
