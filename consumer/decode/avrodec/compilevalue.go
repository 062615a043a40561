package avrodec

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// value compiles the op that reads a value of writer type w and makes the
// Row value of column type t. column is the top-level column and path the
// place in it, both for errors. A column takes these writer types (a union
// is taken when each of its branches is, null giving null):
//
//	string                    string, enum (its symbol)
//	int                       int; long, range checked per value
//	long                      int, long
//	float                     int, long, float (Avro's promotions)
//	double                    int, long, float, double
//	boolean                   boolean
//	date                      int/date
//	time                      int/time-millis, long/time-micros
//	timestamp(tz)(_ns)        long/[local-]timestamp-millis, -micros,
//	                          -nanos, scaled to the column's unit; digits
//	                          below it are cut
//	decimal(P,S)              decimal on bytes or fixed, rescaled exactly
//	                          per value (as JSON's decimals are)
//	binary                    bytes, string, fixed
//	fixed[L]                  fixed(L); bytes, its length checked per value
//	uuid                      string (the 36-character form), fixed(16)
//	struct                    record, fields by name
//	list                      array
//	map<string, V>            map
//
// Anything else is an error naming the column.
func (c *compiler) value(t iceberg.Type, w *node, column, path string) (op, error) {
	o := op{info: &info{column: column, path: path}}
	if w.kind == kUnion {
		o.code, o.node, o.nul = opUnion, w, nullBranch(w)
		for _, b := range w.branches {
			if b.kind == kNull {
				o.alts = append(o.alts, op{code: opNull, info: &info{column: column, path: path}})
				continue
			}
			alt, err := c.value(t, b, column, path)
			if err != nil {
				return op{}, err
			}
			o.alts = append(o.alts, alt)
		}
		if len(o.alts) == 2 && o.nul >= 0 {
			// The value's code kept in the op itself: the loop over a
			// wide record's nullable columns then reads no alts.
			o.inner = o.alts[1-o.nul].code
		}
		return o, nil
	}
	mismatch := func() (op, error) {
		return op{}, fmt.Errorf("column %q: Avro field %s of type %s cannot become %s", column, path, w, t)
	}
	switch t := t.(type) {
	case iceberg.StringType:
		switch {
		case w.kind == kString:
			o.code = opString
		case w.kind == kEnum:
			o.code, o.symbols = opEnum, w.symbols
		default:
			return mismatch()
		}
	case iceberg.Int32Type:
		switch {
		case w.kind == kInt && w.logical == "":
			o.code = opIntInt
		case w.kind == kLong && w.logical == "":
			o.code = opLongInt
		default:
			return mismatch()
		}
	case iceberg.Int64Type:
		switch {
		case w.kind == kInt && w.logical == "":
			o.code = opIntLong
		case w.kind == kLong && w.logical == "":
			o.code = opLongLong
		default:
			return mismatch()
		}
	case iceberg.Float32Type:
		switch {
		case w.kind == kInt && w.logical == "":
			o.code = opIntFloat
		case w.kind == kLong && w.logical == "":
			o.code = opLongFloat
		case w.kind == kFloat:
			o.code = opFloatFloat
		default:
			return mismatch()
		}
	case iceberg.Float64Type:
		switch {
		case w.kind == kInt && w.logical == "":
			o.code = opIntDouble
		case w.kind == kLong && w.logical == "":
			o.code = opLongDouble
		case w.kind == kFloat:
			o.code = opFloatDouble
		case w.kind == kDouble:
			o.code = opDoubleDouble
		default:
			return mismatch()
		}
	case iceberg.BooleanType:
		if w.kind != kBoolean {
			return mismatch()
		}
		o.code = opBool
	case iceberg.DateType:
		if w.logical != "date" {
			return mismatch()
		}
		o.code = opDate
	case iceberg.TimeType:
		switch w.logical {
		case "time-millis":
			o.code = opTimeMillis
		case "time-micros":
			o.code = opTimeMicros
		default:
			return mismatch()
		}
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		var from int64 // nanoseconds per unit of the writer
		switch w.logical {
		case "timestamp-millis", "local-timestamp-millis":
			from = 1e6
		case "timestamp-micros", "local-timestamp-micros":
			from = 1e3
		case "timestamp-nanos", "local-timestamp-nanos":
			from = 1
		default:
			return mismatch()
		}
		to := int64(1e3)
		if _, ok := t.(iceberg.TimestampNsType); ok {
			to = 1
		} else if _, ok := t.(iceberg.TimestampTzNsType); ok {
			to = 1
		}
		o.code, o.mul, o.div = opTimestamp, 1, 1
		if from > to {
			o.mul = from / to
		} else {
			o.div = to / from
		}
	case iceberg.DecimalType:
		if w.logical != "decimal" {
			return mismatch()
		}
		// A 128-bit decimal holds 38 digits, so a larger writer scale
		// could never give a value (and would not print in errors).
		if w.scale > 38 {
			return op{}, fmt.Errorf("column %q: Avro field %s has scale %d, over the 38 digits a decimal column holds", column, path, w.scale)
		}
		o.prec, o.scale, o.wscale = int32(t.Precision()), int32(t.Scale()), int32(w.scale)
		if w.kind == kFixed {
			o.code, o.n = opDecFixed, w.size
		} else {
			o.code = opDecBytes
		}
	case iceberg.BinaryType:
		switch w.kind {
		case kBytes, kString:
			o.code = opBytes
		case kFixed:
			o.code, o.n = opFixed, w.size
		default:
			return mismatch()
		}
	case iceberg.FixedType:
		switch {
		case w.kind == kFixed && w.size == t.Len():
			o.code, o.n = opFixed, w.size
		case w.kind == kBytes && w.logical == "":
			o.code, o.n = opBytesFixed, t.Len()
		default:
			return mismatch()
		}
	case iceberg.UUIDType:
		switch {
		case w.kind == kString:
			o.code = opUUIDString
		case w.kind == kFixed && w.size == 16:
			o.code = opUUIDFixed
		default:
			return mismatch()
		}
	case *iceberg.StructType:
		if w.kind != kRecord {
			return mismatch()
		}
		return c.structOp(t, w, column, path)
	case *iceberg.ListType:
		if w.kind != kArray {
			return mismatch()
		}
		elem, err := c.value(t.Element, w.items, column, path+"[]")
		if err != nil {
			return op{}, err
		}
		o.code, o.elem, o.elemRequired, o.elemZero = opList, &elem, t.ElementRequired, w.items.zero
	case *iceberg.MapType:
		if w.kind != kMap {
			return mismatch()
		}
		if _, ok := t.KeyType.(iceberg.StringType); !ok {
			return op{}, fmt.Errorf("column %q: map key type %s cannot hold Avro map keys, which are strings", column, t.KeyType)
		}
		val, err := c.value(t.ValueType, w.values, column, path+".value")
		if err != nil {
			return op{}, err
		}
		o.code, o.elem, o.elemRequired = opMap, &val, t.ValueRequired
	default:
		return mismatch()
	}
	return o, nil
}

// structOp compiles a record into a struct column: the struct's fields
// take the record's fields of the same name; a struct field the record
// lacks is null.
func (c *compiler) structOp(t *iceberg.StructType, w *node, column, path string) (op, error) {
	o := op{code: opStruct, n: len(t.FieldList), info: &info{column: column, path: path, node: w}}
	byName := make(map[string]int, len(t.FieldList))
	for i, f := range t.FieldList {
		byName[f.Name] = i
		o.fieldNames = append(o.fieldNames, f.Name)
		if f.Required {
			o.required = append(o.required, int32(i))
		}
	}
	for _, f := range w.fields {
		i, ok := byName[f.name]
		if !ok {
			o.sub = append(o.sub, skipOp(f.typ))
			continue
		}
		fo, err := c.value(t.FieldList[i].Type, f.typ, column, path+"."+f.name)
		if err != nil {
			return op{}, err
		}
		fo.col = int32(i)
		o.sub = append(o.sub, fo)
	}
	return o, nil
}
