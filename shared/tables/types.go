package tables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// primitiveTypes are the type names ParseType accepts without parameters.
var primitiveTypes = map[string]iceberg.Type{
	"string":      iceberg.PrimitiveTypes.String,
	"int":         iceberg.PrimitiveTypes.Int32,
	"long":        iceberg.PrimitiveTypes.Int64,
	"float":       iceberg.PrimitiveTypes.Float32,
	"double":      iceberg.PrimitiveTypes.Float64,
	"boolean":     iceberg.PrimitiveTypes.Bool,
	"date":        iceberg.PrimitiveTypes.Date,
	"time":        iceberg.PrimitiveTypes.Time,
	"timestamp":   iceberg.PrimitiveTypes.Timestamp,
	"timestamptz": iceberg.PrimitiveTypes.TimestampTz,
	"binary":      iceberg.PrimitiveTypes.Binary,
	"uuid":        iceberg.PrimitiveTypes.UUID,
}

const typeHelp = "want string, int, long, float, double, boolean, date, time, timestamp, " +
	"timestamptz, binary, uuid, decimal(P,S), fixed[N], list<T>, map<K,V> or struct<name:T,...>"

// ParseType parses an Iceberg type as written in a dataset's create block:
// a primitive name (string, int, long, float, double, boolean, date, time,
// timestamp, timestamptz, binary, uuid), decimal(P,S), fixed[N], list<T>,
// map<K,V> or struct<name:T,...>, nested to any depth. Names are case
// insensitive and spaces around punctuation are ignored.
//
// Nested fields, list elements and map values are optional; map keys are
// required, as Iceberg demands. The field IDs of nested fields are numbered
// from 1 in the order they appear; a table's create assigns fresh IDs.
func ParseType(s string) (iceberg.Type, error) {
	next := 1
	return parseTypeIDs(s, &next)
}

// parseTypeIDs parses s, numbering nested fields from *next on.
func parseTypeIDs(s string, next *int) (iceberg.Type, error) {
	p := &typeParser{src: s, next: next}
	t, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("parse type %q: %w", s, err)
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("parse type %q: unexpected %q at position %d", s, p.src[p.pos:], p.pos)
	}
	return t, nil
}

// typeParser is a recursive-descent parser over one type string.
type typeParser struct {
	src  string
	pos  int
	next *int
}

func (p *typeParser) id() int {
	id := *p.next
	*p.next++
	return id
}

func (p *typeParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// word reads a name made of letters, digits and underscores.
func (p *typeParser) word() string {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

func (p *typeParser) expect(c byte) error {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return fmt.Errorf("missing %q at end", c)
	}
	if p.src[p.pos] != c {
		return fmt.Errorf("want %q at position %d, got %q", c, p.pos, p.src[p.pos])
	}
	p.pos++
	return nil
}

func (p *typeParser) peek(c byte) bool {
	p.skipSpace()
	return p.pos < len(p.src) && p.src[p.pos] == c
}

func (p *typeParser) number() (int, error) {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if start == p.pos {
		return 0, fmt.Errorf("want a number at position %d", start)
	}
	return strconv.Atoi(p.src[start:p.pos])
}

func (p *typeParser) parse() (iceberg.Type, error) {
	start := p.pos
	name := strings.ToLower(p.word())
	if name == "" {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, fmt.Errorf("missing type: %s", typeHelp)
		}
		return nil, fmt.Errorf("want a type name at position %d: %s", p.pos, typeHelp)
	}
	if t, ok := primitiveTypes[name]; ok {
		return t, nil
	}
	switch name {
	case "decimal":
		if err := p.expect('('); err != nil {
			return nil, fmt.Errorf("decimal: %w", err)
		}
		prec, err := p.number()
		if err != nil {
			return nil, fmt.Errorf("decimal precision: %w", err)
		}
		if err := p.expect(','); err != nil {
			return nil, fmt.Errorf("decimal: %w", err)
		}
		scale, err := p.number()
		if err != nil {
			return nil, fmt.Errorf("decimal scale: %w", err)
		}
		if err := p.expect(')'); err != nil {
			return nil, fmt.Errorf("decimal: %w", err)
		}
		if prec < 1 || prec > 38 {
			return nil, fmt.Errorf("decimal precision must be 1 to 38, got %d", prec)
		}
		if scale > prec {
			return nil, fmt.Errorf("decimal scale %d is larger than precision %d", scale, prec)
		}
		return iceberg.DecimalTypeOf(prec, scale), nil
	case "fixed":
		if err := p.expect('['); err != nil {
			return nil, fmt.Errorf("fixed: %w", err)
		}
		n, err := p.number()
		if err != nil {
			return nil, fmt.Errorf("fixed length: %w", err)
		}
		if err := p.expect(']'); err != nil {
			return nil, fmt.Errorf("fixed: %w", err)
		}
		if n < 1 {
			return nil, fmt.Errorf("fixed length must be positive, got %d", n)
		}
		return iceberg.FixedTypeOf(n), nil
	case "list":
		if err := p.expect('<'); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		id := p.id()
		elem, err := p.parse()
		if err != nil {
			return nil, fmt.Errorf("list element: %w", err)
		}
		if err := p.expect('>'); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		return &iceberg.ListType{ElementID: id, Element: elem}, nil
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, fmt.Errorf("map: %w", err)
		}
		keyID, valueID := p.id(), p.id()
		key, err := p.parse()
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		if err := p.expect(','); err != nil {
			return nil, fmt.Errorf("map: %w", err)
		}
		val, err := p.parse()
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		if err := p.expect('>'); err != nil {
			return nil, fmt.Errorf("map: %w", err)
		}
		return &iceberg.MapType{KeyID: keyID, KeyType: key, ValueID: valueID, ValueType: val}, nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, fmt.Errorf("struct: %w", err)
		}
		var fields []iceberg.NestedField
		seen := map[string]bool{}
		for {
			fname := p.word()
			if fname == "" {
				return nil, fmt.Errorf("struct: want a field name at position %d", p.pos)
			}
			if seen[fname] {
				return nil, fmt.Errorf("struct: field %q appears twice", fname)
			}
			seen[fname] = true
			if err := p.expect(':'); err != nil {
				return nil, fmt.Errorf("struct field %s: %w", fname, err)
			}
			id := p.id()
			ft, err := p.parse()
			if err != nil {
				return nil, fmt.Errorf("struct field %s: %w", fname, err)
			}
			fields = append(fields, iceberg.NestedField{ID: id, Name: fname, Type: ft})
			if p.peek(',') {
				p.pos++
				continue
			}
			if err := p.expect('>'); err != nil {
				return nil, fmt.Errorf("struct: %w", err)
			}
			return &iceberg.StructType{FieldList: fields}, nil
		}
	}
	return nil, fmt.Errorf("unknown type %q at position %d: %s", name, start, typeHelp)
}
