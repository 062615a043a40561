package consumer

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/icewal/ingestor/consumer/decode"
)

// iceberg-go derives, with Iceberg field IDs and without large types. The
// segment writer builds its RecordBuilder from it, and appendValue expects
// exactly the builders it gives (string, binary, list: not the large
// variants; uuid: the arrow uuid extension type; timestamps in microseconds).
func ArrowSchema(schema *iceberg.Schema) (*arrow.Schema, error) {
	s, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("convert iceberg schema to arrow: %w", err)
	}
	return s, nil
}

// appendValue appends v, in the Row representation, to the builder.
func appendValue(b array.Builder, v any) {
	if v == nil {
		// A null struct also appends nulls to its children.
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.Time64Builder:
		b.Append(v.(arrow.Time64))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.BinaryBuilder: // binary and large binary
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *extensions.UUIDBuilder:
		b.Append(v.(uuid.UUID))
	case *array.StructBuilder:
		vals := v.([]any)
		if len(vals) != b.NumField() {
			panic(fmt.Sprintf("consumer: append: struct value has %d fields, builder has %d", len(vals), b.NumField()))
		}
		b.Append(true)
		for i, fv := range vals {
			appendValue(b.FieldBuilder(i), fv)
		}
	case *array.ListBuilder:
		b.Append(true)
		vb := b.ValueBuilder()
		for _, ev := range v.([]any) {
			appendValue(vb, ev)
		}
	case *array.LargeListBuilder:
		b.Append(true)
		vb := b.ValueBuilder()
		for _, ev := range v.([]any) {
			appendValue(vb, ev)
		}
	case *array.MapBuilder:
		m := v.(decode.MapValue)
		if len(m.Keys) != len(m.Values) {
			panic(fmt.Sprintf("consumer: append: map value has %d keys and %d values", len(m.Keys), len(m.Values)))
		}
		b.Append(true)
		kb, ib := b.KeyBuilder(), b.ItemBuilder()
		for i := range m.Keys {
			appendValue(kb, m.Keys[i])
			appendValue(ib, m.Values[i])
		}
	default:
		panic(fmt.Sprintf("consumer: append: unsupported builder %T for %s", b, b.Type()))
	}
}
