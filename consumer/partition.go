package consumer

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// partitioner computes a row's Iceberg partition values from the table's
// partition spec (identity, bucket, truncate, year, month, day, hour).
type partitioner struct {
	fields []partField
}

type partField struct {
	id        int // partition field id
	column    int // index of the source column among the schema's top-level fields
	srcType   iceberg.Type
	transform iceberg.Transform
	identity  bool
	// perMicros is the length of an hour or a day in microseconds for an
	// hour or day transform of a timestamp column (0 otherwise): the
	// segment key is then the floor of the value divided by it, the
	// number iceberg-go's transform gives, without building a literal.
	perMicros int64
}

const (
	microsPerHour = int64(3_600_000_000)
	microsPerDay  = 24 * microsPerHour
)

// timePeriod returns the microseconds of one period of a transform that
// cuts a microsecond timestamp column by hours or days, else 0.
func timePeriod(src iceberg.Type, t iceberg.Transform) int64 {
	switch src.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
	default:
		return 0
	}
	switch t.(type) {
	case iceberg.HourTransform:
		return microsPerHour
	case iceberg.DayTransform:
		return microsPerDay
	}
	return 0
}

// floorDiv divides rounding towards minus infinity, as Iceberg's time
// transforms do for times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func newPartitioner(schema *iceberg.Schema, spec *iceberg.PartitionSpec) (*partitioner, error) {
	p := &partitioner{}
	top := map[int]int{}
	for i, f := range schema.Fields() {
		top[f.ID] = i
	}
	for _, f := range spec.Fields() {
		col, ok := top[f.SourceID()]
		if !ok {
			return nil, fmt.Errorf("partition field %s: source column %d is not a top-level column", f.Name, f.SourceID())
		}
		_, identity := f.Transform.(iceberg.IdentityTransform)
		p.fields = append(p.fields, partField{
			id: f.FieldID, column: col, srcType: schema.Fields()[col].Type, transform: f.Transform, identity: identity,
			perMicros: timePeriod(schema.Fields()[col].Type, f.Transform),
		})
	}
	return p, nil
}

// values returns the partition values of row keyed by partition field id.
func (p *partitioner) values(row Row) (map[int]any, error) {
	if len(p.fields) == 0 {
		return nil, nil
	}
	vals := make(map[int]any, len(p.fields))
	for i := range p.fields {
		out, err := p.value(i, row)
		if err != nil {
			return nil, err
		}
		vals[p.fields[i].id] = out
	}
	return vals, nil
}

// appendKey appends to dst a key that is equal for rows of the same
// partition and different otherwise. It allocates nothing for the usual
// partition values (strings, integers), so the segment of a row is found
// without building its partition values.
func (p *partitioner) appendKey(dst []byte, row Row) ([]byte, error) {
	for i := range p.fields {
		if f := &p.fields[i]; f.perMicros > 0 {
			// The hour or day of a timestamp, the commonest partition
			// of a time series, without iceberg-go's literals: those
			// cost three allocations a record. The key of a period is
			// its number, as for an integer value; values computes the
			// same number through iceberg-go when the segment opens.
			if ts, ok := row[f.column].(arrow.Timestamp); ok {
				dst = append(dst, 'i')
				dst = strconv.AppendInt(dst, floorDiv(int64(ts), f.perMicros), 10)
				dst = append(dst, ';')
				continue
			}
		}
		out, err := p.value(i, row)
		if err != nil {
			return dst, err
		}
		// Each value is tagged with its kind, and a string with its
		// length, so that no value (a tenant named "<nil>", a string
		// holding the separator) can take another's key.
		switch v := out.(type) {
		case nil:
			dst = append(dst, 'n')
		case string:
			dst = append(dst, 's')
			dst = strconv.AppendInt(dst, int64(len(v)), 10)
			dst = append(dst, ':')
			dst = append(dst, v...)
		case int32:
			dst = append(dst, 'i')
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = append(dst, 'i')
			dst = strconv.AppendInt(dst, v, 10)
		case bool:
			dst = append(dst, 'b')
			dst = strconv.AppendBool(dst, v)
		default:
			s := fmt.Sprintf("%T %v", v, v)
			dst = append(dst, 'v')
			dst = strconv.AppendInt(dst, int64(len(s)), 10)
			dst = append(dst, ':')
			dst = append(dst, s...)
		}
		dst = append(dst, ';')
	}
	return dst, nil
}

// value returns the transformed partition value of field i for row; nil
// for a null.
func (p *partitioner) value(i int, row Row) (any, error) {
	f := &p.fields[i]
	v := row[f.column]
	if v == nil {
		return nil, nil
	}
	if f.identity {
		// An identity partition of a string or integer column is the
		// value itself: no literal to build.
		switch x := v.(type) {
		case string, int32, int64, bool:
			return x, nil
		}
	}
	lit, err := literalOf(v, f.srcType)
	if err != nil {
		return nil, err
	}
	res := f.transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true})
	if !res.Valid {
		return nil, nil
	}
	return res.Val.Any(), nil
}

// literalOf turns a decoded value into the Iceberg literal of its column's
// type, the input of a partition transform.
func literalOf(v any, t iceberg.Type) (iceberg.Literal, error) {
	switch x := v.(type) {
	case string:
		return iceberg.NewLiteral(x), nil
	case int32:
		return iceberg.NewLiteral(x), nil
	case int64:
		return iceberg.NewLiteral(x), nil
	case float32:
		return iceberg.NewLiteral(x), nil
	case float64:
		return iceberg.NewLiteral(x), nil
	case bool:
		return iceberg.NewLiteral(x), nil
	case []byte:
		return iceberg.NewLiteral(x), nil
	case arrow.Date32:
		return iceberg.NewLiteral(iceberg.Date(x)), nil
	case arrow.Time64:
		return iceberg.NewLiteral(iceberg.Time(x)), nil
	case arrow.Timestamp:
		return iceberg.NewLiteral(iceberg.Timestamp(x)), nil
	case uuid.UUID:
		return iceberg.NewLiteral(x), nil
	case [16]byte:
		return iceberg.NewLiteral(uuid.UUID(x)), nil
	case decimal128.Num:
		d, ok := t.(iceberg.DecimalType)
		if !ok {
			return nil, fmt.Errorf("decimal value for %s column", t)
		}
		return iceberg.NewLiteral(iceberg.Decimal{Val: x, Scale: d.Scale()}), nil
	}
	return nil, fmt.Errorf("cannot partition on a %T value of a %s column", v, t)
}
