package avrodec

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// TableSchema maps the writer schema, a record, to the Iceberg columns of
// a table created from it, as the Iceberg specification's Avro appendix
// says:
//
//	["null", T] or [T, "null"]        optional T (a field without null is required)
//	boolean, int, long                boolean, int, long
//	float, double                     float, double
//	string, enum                      string
//	bytes                             binary
//	fixed(L)                          fixed[L]
//	decimal(P,S) on bytes or fixed    decimal(P,S)
//	uuid on string or fixed(16)       uuid
//	date                              date
//	time-millis, time-micros          time
//	timestamp-millis, -micros         timestamptz
//	local-timestamp-millis, -micros   timestamp
//	timestamp-nanos                   timestamptz_ns
//	local-timestamp-nanos             timestamp_ns
//	record                            struct
//	array                             list
//	map                               map<string, V>
//
// Field ids are assigned from 1, the fields of a struct before anything
// nested in them, as Iceberg assigns fresh ids. A union of more than one
// non-null type, a field of type null and a recursive type have no column
// and are errors naming the field.
func TableSchema(s *Schema) (*iceberg.Schema, error) {
	if s.root.kind != kRecord {
		return nil, fmt.Errorf("table from Avro schema: the schema is %s, not a record", s.root)
	}
	t := &tabler{onPath: map[string]bool{}}
	fields, err := t.structFields(s.root, "")
	if err != nil {
		return nil, fmt.Errorf("table from Avro schema: %w", err)
	}
	return iceberg.NewSchema(0, fields...), nil
}

type tabler struct {
	lastID int
	// onPath holds the records being mapped, to refuse a recursive type.
	onPath map[string]bool
}

func (t *tabler) id() int {
	t.lastID++
	return t.lastID
}

// nonNull returns the type of a field with its null branch removed, and
// whether the field is required (its type has no null).
func nonNull(n *node, path string) (*node, bool, error) {
	switch n.kind {
	case kNull:
		return nil, false, fmt.Errorf("field %s: type null has no Iceberg type", path)
	case kUnion:
		var t *node
		for _, b := range n.branches {
			if b.kind == kNull {
				continue
			}
			if t != nil {
				return nil, false, fmt.Errorf("field %s: union %s has more than one type besides null, which no Iceberg type holds", path, unionString(n))
			}
			t = b
		}
		if t == nil {
			return nil, false, fmt.Errorf("field %s: union of null alone has no Iceberg type", path)
		}
		return t, false, nil
	}
	return n, true, nil
}

func unionString(n *node) string {
	s := "["
	for i, b := range n.branches {
		if i > 0 {
			s += ", "
		}
		s += b.String()
	}
	return s + "]"
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (t *tabler) structFields(rec *node, path string) ([]iceberg.NestedField, error) {
	if t.onPath[rec.name] {
		return nil, fmt.Errorf("field %s: record %s is recursive, which no Iceberg type holds", path, rec.name)
	}
	t.onPath[rec.name] = true
	defer delete(t.onPath, rec.name)
	out := make([]iceberg.NestedField, len(rec.fields))
	for i, f := range rec.fields {
		out[i] = iceberg.NestedField{ID: t.id(), Name: f.name}
	}
	for i, f := range rec.fields {
		p := join(path, f.name)
		n, required, err := nonNull(f.typ, p)
		if err != nil {
			return nil, err
		}
		typ, err := t.icebergType(n, p)
		if err != nil {
			return nil, err
		}
		out[i].Type, out[i].Required = typ, required
	}
	return out, nil
}

func (t *tabler) icebergType(n *node, path string) (iceberg.Type, error) {
	switch n.logical {
	case "decimal":
		if n.prec > 38 {
			return nil, fmt.Errorf("field %s: decimal precision %d is over Iceberg's 38", path, n.prec)
		}
		return iceberg.DecimalTypeOf(n.prec, n.scale), nil
	case "uuid":
		return iceberg.PrimitiveTypes.UUID, nil
	case "date":
		return iceberg.PrimitiveTypes.Date, nil
	case "time-millis", "time-micros":
		return iceberg.PrimitiveTypes.Time, nil
	case "timestamp-millis", "timestamp-micros":
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case "local-timestamp-millis", "local-timestamp-micros":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case "timestamp-nanos":
		return iceberg.PrimitiveTypes.TimestampTzNs, nil
	case "local-timestamp-nanos":
		return iceberg.PrimitiveTypes.TimestampNs, nil
	}
	switch n.kind {
	case kBoolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case kInt:
		return iceberg.PrimitiveTypes.Int32, nil
	case kLong:
		return iceberg.PrimitiveTypes.Int64, nil
	case kFloat:
		return iceberg.PrimitiveTypes.Float32, nil
	case kDouble:
		return iceberg.PrimitiveTypes.Float64, nil
	case kString, kEnum:
		return iceberg.PrimitiveTypes.String, nil
	case kBytes:
		return iceberg.PrimitiveTypes.Binary, nil
	case kFixed:
		return iceberg.FixedTypeOf(n.size), nil
	case kRecord:
		fields, err := t.structFields(n, path)
		if err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case kArray:
		id := t.id()
		elem, required, err := nonNull(n.items, path+"[]")
		if err != nil {
			return nil, err
		}
		et, err := t.icebergType(elem, path+"[]")
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: et, ElementRequired: required}, nil
	case kMap:
		keyID, valID := t.id(), t.id()
		val, required, err := nonNull(n.values, path+".value")
		if err != nil {
			return nil, err
		}
		vt, err := t.icebergType(val, path+".value")
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: keyID, KeyType: iceberg.PrimitiveTypes.String, ValueID: valID, ValueType: vt, ValueRequired: required}, nil
	}
	return nil, fmt.Errorf("field %s: type %s has no Iceberg type", path, n)
}
