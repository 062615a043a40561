package shapeenc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// AvroShape writes a shape's events as Avro binary: a flat record of one
// field per column, named as the column, nullable where the column is
// optional, so that a dataset without customMapping reads every column by
// name (the ingest-bench layout). Each event is the shape's JSON event
// mapped to its columns, then encoded: the same seq gives the same values
// in either format.
type AvroShape struct {
	shape devenv.Shape
	dec   *decode.Decoder
	// Schema is the writer schema, Avro's JSON.
	Schema string
	types  []string
	req    []bool
	row    decode.Row
	buf    []byte
}

// NewAvroShape returns the Avro writer of shape's events.
func NewAvroShape(shape devenv.Shape) (*AvroShape, error) {
	schema, err := tables.BuildSchema(shape.Columns)
	if err != nil {
		return nil, err
	}
	dec, err := decode.New(schema, shape.Mapping)
	if err != nil {
		return nil, err
	}
	a := &AvroShape{shape: shape, dec: dec}
	var fields []string
	for _, c := range shape.Columns {
		t, err := avroType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		if !c.Required {
			t = `["null",` + t + `]`
		}
		name, _ := json.Marshal(c.Name)
		fields = append(fields, fmt.Sprintf(`{"name":%s,"type":%s}`, name, t))
		a.types = append(a.types, c.Type)
		a.req = append(a.req, c.Required)
	}
	a.Schema = `{"type":"record","name":"Event","namespace":"bench","fields":[` + strings.Join(fields, ",") + `]}`
	return a, nil
}

// avroType is the Avro type of a shape column's Iceberg type.
func avroType(t string) (string, error) {
	switch t {
	case "string", "long", "double", "boolean":
		return `"` + t + `"`, nil
	case "timestamptz":
		return `{"type":"long","logicalType":"timestamp-micros"}`, nil
	}
	var p, s int
	if _, err := fmt.Sscanf(t, "decimal(%d,%d)", &p, &s); err == nil {
		return fmt.Sprintf(`{"type":"bytes","logicalType":"decimal","precision":%d,"scale":%d}`, p, s), nil
	}
	return "", fmt.Errorf("type %s has no Avro encoding in the bench", t)
}

// Append appends the Avro binary of event seq of tenant, made at time at,
// to dst. It is not safe for concurrent use.
func (a *AvroShape) Append(dst []byte, id, tenant string, seq int64, at time.Time) ([]byte, error) {
	a.buf = a.shape.Append(a.buf[:0], id, tenant, seq, at)
	row, err := a.dec.DecodeInto(a.row, a.buf)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	a.row = row
	for i, v := range row {
		if !a.req[i] {
			if v == nil {
				dst = append(dst, 0) // the union's null branch
				continue
			}
			dst = append(dst, 2) // branch 1, zigzag
		} else if v == nil {
			return nil, fmt.Errorf("event %d: required column %s is null", seq, a.shape.Columns[i].Name)
		}
		switch x := v.(type) {
		case string:
			dst = binary.AppendVarint(dst, int64(len(x)))
			dst = append(dst, x...)
		case int64:
			dst = binary.AppendVarint(dst, x)
		case float64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
		case bool:
			if x {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case arrow.Timestamp:
			dst = binary.AppendVarint(dst, int64(x))
		case decimal128.Num:
			b := twosComplement(x.BigInt())
			dst = binary.AppendVarint(dst, int64(len(b)))
			dst = append(dst, b...)
		default:
			return nil, fmt.Errorf("event %d: column %s: no Avro encoding of %T", seq, a.shape.Columns[i].Name, v)
		}
	}
	return dst, nil
}

// twosComplement is n as Avro's decimal bytes: big-endian two's
// complement, as short as the sign allows.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n = 2^k - |n| for the least k that keeps the sign bit set.
	k := uint(n.BitLen()/8+1) * 8
	m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), k), n)
	b := m.Bytes()
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}
