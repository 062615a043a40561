package consumer

import (
	"fmt"
	"strings"

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
		p.fields = append(p.fields, partField{
			id: f.FieldID, column: col, srcType: schema.Fields()[col].Type, transform: f.Transform,
		})
	}
	return p, nil
}

// values returns the partition values of row keyed by partition field id,
// and a key that is equal for rows of the same partition.
func (p *partitioner) values(row Row) (map[int]any, string, error) {
	if len(p.fields) == 0 {
		return nil, "", nil
	}
	vals := make(map[int]any, len(p.fields))
	var key strings.Builder
	for _, f := range p.fields {
		v := row[f.column]
		var out any
		if v != nil {
			lit, err := literalOf(v, f.srcType)
			if err != nil {
				return nil, "", err
			}
			res := f.transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true})
			if res.Valid {
				out = res.Val.Any()
			}
		}
		vals[f.id] = out
		fmt.Fprintf(&key, "%d=%v\x00", f.id, out)
	}
	return vals, key.String(), nil
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
