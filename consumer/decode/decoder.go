package decode

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	"github.com/apache/iceberg-go"
	"github.com/jmespath/go-jmespath"
)

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
	// required is the set of the required columns below maxConverted,
	// which the conversion after a visit checks besides the pending ones.
	required [maxConverted / 64]uint64
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

// New compiles mapping (column name -> JMESPath expression) for
// schema. Every key must be a top-level column; a column without an
// expression is always null, so it must be optional. Types without a JSON
// representation (variant, geometry, geography, unknown) are rejected.
func New(schema *iceberg.Schema, mapping map[string]string) (*Decoder, error) {
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
		if f.Required && i < maxConverted {
			d.required[i/64] |= 1 << (i % 64)
		}
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
// levels still apply). Call it before the first DecodeInto.
func (d *Decoder) Limit(maxBytes, maxDepth int) {
	d.maxBytes, d.maxDepth = maxBytes, maxDepth
}

// Limits returns the limits Limit set, so that a decoder built for a
// changed schema keeps them.
func (d *Decoder) Limits() (maxBytes, maxDepth int) { return d.maxBytes, d.maxDepth }

// DecodeInto parses one JSON payload and converts it to a Row, written
// into dst when it has room for the row, so a caller that is done with
// each row before the next (the segment writer copies the values into
// its row buffer or Arrow builders) allocates no Row per record. The
// returned Row is dst resliced, or a new one when dst is too small. The
// error is always a *Error, and holds nothing of the payload.
//
// The payload is parsed in place, not copied: a string in the row (a
// string column, a map key, a string inside a struct or list) that had
// no escape in the JSON text shares its bytes with payload. The row is
// therefore valid only as long as payload is not modified; a caller that
// reuses or overwrites the payload's buffer must copy the row's strings
// first. Binary, fixed, decimal and the other non-string values never
// share the payload's bytes.
func (d *Decoder) DecodeInto(dst Row, payload []byte) (Row, error) {
	if d.maxBytes > 0 && len(payload) > d.maxBytes {
		return nil, &Error{Reason: ReasonTooLarge, Err: fmt.Errorf("%d bytes, over the limit of %d", len(payload), d.maxBytes)}
	}
	// The payload is read as a string without a copy (wide events are
	// 2 KB, and copying them was the only allocation the size of the
	// record); every unescaped string and every number in the row is a
	// substring of it, so the row aliases payload (see above). Nothing
	// here writes to payload.
	p := parser{s: unsafe.String(unsafe.SliceData(payload), len(payload)), max: d.maxDepth}
	var row Row
	if cap(dst) >= len(d.cols) {
		row = dst[:len(d.cols)]
		clear(row)
	} else {
		row = make(Row, len(d.cols))
	}
	if d.root != nil {
		// Only plain paths: one pass that materializes only the mapped
		// values and validates the rest without building it, converting
		// most of them as it reads them.
		p.box = cellPool.Get().(*cells)
		err := p.visitDocument(d.root, row)
		cellPool.Put(p.box)
		if err != nil {
			return nil, syntaxError(err)
		}
		if err := d.convertPending(row, &p.pending); err != nil {
			return nil, err
		}
		return row, nil
	}
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
				return nil, &Error{Reason: ReasonConvert, Column: c.name, Err: fmt.Errorf("evaluate mapping: %w", err)}
			}
			row[i] = v
		}
	}
	if err := d.Convert(row); err != nil {
		return nil, err
	}
	return row, nil
}

// Convert converts, in place, a row of JSON values (one per column, nil
// for a missing one; as this package's parser, encoding/json or
// go-jmespath give them) to the columns' types, with the rules and errors
// of DecodeInto, which calls it once the mapping has selected the values. The
// error is always a *Error.
func (d *Decoder) Convert(row Row) error {
	if len(row) != len(d.cols) {
		panic(fmt.Sprintf("decode: Convert: row has %d values, the schema %d columns", len(row), len(d.cols)))
	}
	for i := range row {
		if err := d.convertColumn(row, i); err != nil {
			return err
		}
	}
	return nil
}

// convertPending converts the row a visit left: below maxConverted only
// the columns in pending (which hold JSON values) and the required ones
// (which may be missing) need a look, the others being null or converted
// already, so a wide table whose visit converted nearly everything costs
// a few words of bits rather than a pass over every column. The columns
// are taken in schema order, so the error is the one Convert would give.
func (d *Decoder) convertPending(row Row, pending *[maxConverted / 64]uint64) error {
	for w := range pending {
		for todo := pending[w] | d.required[w]; todo != 0; todo &= todo - 1 {
			b := bits.TrailingZeros64(todo)
			i := w*64 + b
			if pending[w]&(1<<b) == 0 && row[i] != nil {
				continue // required, and converted as it was read
			}
			if err := d.convertColumn(row, i); err != nil {
				return err
			}
		}
	}
	for i := maxConverted; i < len(row); i++ {
		if err := d.convertColumn(row, i); err != nil {
			return err
		}
	}
	return nil
}

// convertColumn converts row[i], a JSON value or nil, in place.
func (d *Decoder) convertColumn(row Row, i int) error {
	c := &d.cols[i]
	v := row[i]
	if v == nil {
		if c.required {
			return &Error{Reason: ReasonMissingRequired, Column: c.name, Err: errMissing}
		}
		return nil
	}
	cv, err := c.conv.convert(v)
	if err != nil {
		if ce, ok := err.(*convertError); ok && len(ce.path) > 0 {
			ce.path = append(ce.path, c.name)
		}
		return &Error{Reason: ReasonConvert, Column: c.name, Err: err}
	}
	row[i] = cv
	return nil
}

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
