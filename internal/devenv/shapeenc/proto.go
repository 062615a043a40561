package shapeenc

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// ProtoShape writes a shape's events as Protobuf messages: one message,
// Event, of one field per column, named as the column and numbered in
// column order from 1, so that a dataset without customMapping reads
// every column by name, as AvroShape does for Avro. Optional columns are
// proto3 `optional` fields (absent when null); timestamptz is a
// google.protobuf.Timestamp and decimal(P,S) a confluent.type.Decimal
// with its precision and scale in the field's metadata, as Confluent's
// serializers write them. Each event is the shape's JSON event mapped to
// its columns, then encoded: the same seq gives the same values in every
// format.
//
// The messages are written field by field with protowire rather than
// through a compiled descriptor: the bench makes them as fast as the
// ingestor reads them, and this package stays free of the decoder it
// feeds.
type ProtoShape struct {
	shape devenv.Shape
	dec   *decode.Decoder
	// Schema is the .proto text, the schema registered for the topic.
	Schema string
	req    []bool
	// prec and scale of each decimal column, which its values carry.
	prec, scale []int
	row         decode.Row
	buf, sub    []byte
}

// NewProtoShape returns the Protobuf writer of shape's events.
func NewProtoShape(shape devenv.Shape) (*ProtoShape, error) {
	schema, err := tables.BuildSchema(shape.Columns)
	if err != nil {
		return nil, err
	}
	dec, err := decode.New(schema, shape.Mapping)
	if err != nil {
		return nil, err
	}
	p := &ProtoShape{shape: shape, dec: dec}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\npackage bench;\nimport \"google/protobuf/timestamp.proto\";\n")
	b.WriteString("import \"confluent/meta.proto\";\nimport \"confluent/type/decimal.proto\";\nmessage Event {\n")
	for i, c := range shape.Columns {
		t, opts, err := protoType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		label := ""
		if !c.Required && !strings.Contains(t, ".") {
			label = "optional " // a message has presence already
		}
		fmt.Fprintf(&b, "  %s%s %s = %d%s;\n", label, t, c.Name, i+1, opts)
		p.req = append(p.req, c.Required)
		var pr, sc int
		fmt.Sscanf(c.Type, "decimal(%d,%d)", &pr, &sc)
		p.prec, p.scale = append(p.prec, pr), append(p.scale, sc)
	}
	b.WriteString("}\n")
	p.Schema = b.String()
	return p, nil
}

// protoType is the Protobuf type of a shape column's Iceberg type, and
// the field options it needs.
func protoType(t string) (typ, opts string, err error) {
	switch t {
	case "string":
		return "string", "", nil
	case "long":
		return "int64", "", nil
	case "double":
		return "double", "", nil
	case "boolean":
		return "bool", "", nil
	case "timestamptz":
		return "google.protobuf.Timestamp", "", nil
	}
	var p, s int
	if _, err := fmt.Sscanf(t, "decimal(%d,%d)", &p, &s); err == nil {
		return "confluent.type.Decimal", fmt.Sprintf(
			` [(confluent.field_meta) = {params: [{key: "precision", value: "%d"}, {key: "scale", value: "%d"}]}]`, p, s), nil
	}
	return "", "", fmt.Errorf("type %s has no Protobuf encoding in the bench", t)
}

// Append appends the Protobuf message of event seq of tenant, made at
// time at, to dst (without the wire format's header and message
// indexes). It is not safe for concurrent use.
func (p *ProtoShape) Append(dst []byte, id, tenant string, seq int64, at time.Time) ([]byte, error) {
	p.buf = p.shape.Append(p.buf[:0], id, tenant, seq, at)
	b, err := p.AppendJSON(dst, p.buf)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	return b, nil
}

// AppendJSON appends the Protobuf message of one of the shape's JSON
// events to dst. It is not safe for concurrent use.
func (p *ProtoShape) AppendJSON(dst, event []byte) ([]byte, error) {
	row, err := p.dec.DecodeInto(p.row, event)
	if err != nil {
		return nil, err
	}
	p.row = row
	for i, v := range row {
		num := protowire.Number(i + 1)
		if v == nil {
			if p.req[i] {
				return nil, fmt.Errorf("required column %s is null", p.shape.Columns[i].Name)
			}
			continue // absent: the optional field's null
		}
		switch x := v.(type) {
		case string:
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendString(dst, x)
		case int64:
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(x))
		case float64:
			dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
			dst = protowire.AppendFixed64(dst, math.Float64bits(x))
		case bool:
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			dst = protowire.AppendVarint(dst, protowire.EncodeBool(x))
		case arrow.Timestamp:
			// google.protobuf.Timestamp: seconds, then non-negative nanos.
			us := int64(x)
			secs, frac := us/1e6, us%1e6
			if frac < 0 {
				secs, frac = secs-1, frac+1e6
			}
			m := protowire.AppendTag(p.sub[:0], 1, protowire.VarintType)
			m = protowire.AppendVarint(m, uint64(secs))
			if frac != 0 {
				m = protowire.AppendTag(m, 2, protowire.VarintType)
				m = protowire.AppendVarint(m, uint64(frac*1000))
			}
			p.sub = m
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, m)
		case decimal128.Num:
			// confluent.type.Decimal: the unscaled value as big-endian
			// two's complement (as Avro's decimal bytes), the precision
			// and the scale.
			m := protowire.AppendTag(p.sub[:0], 1, protowire.BytesType)
			m = protowire.AppendBytes(m, twosComplement(x.BigInt()))
			m = protowire.AppendTag(m, 2, protowire.VarintType)
			m = protowire.AppendVarint(m, uint64(p.prec[i]))
			m = protowire.AppendTag(m, 3, protowire.VarintType)
			m = protowire.AppendVarint(m, uint64(p.scale[i]))
			p.sub = m
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, m)
		default:
			return nil, fmt.Errorf("column %s: no Protobuf encoding of %T", p.shape.Columns[i].Name, v)
		}
	}
	return dst, nil
}
