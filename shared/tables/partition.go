package tables

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// EncodePartition encodes the partition values of one WAL segment for its
// Parquet footer (key walfile.MetaPartition). values maps each partition
// field ID of the table's spec to the transform's result, as
// iceberg.Literal.Any() returns it: bool, int32, int64, float32, float64,
// string, []byte, uuid.UUID, iceberg.Decimal, iceberg.Date, iceberg.Time,
// iceberg.Timestamp or iceberg.TimestampNano; nil is a null partition value.
//
// The result is a JSON object keyed by field ID. Integers are JSON
// numbers, bytes are base64, decimals and UUIDs are strings, and the
// non-finite floats are the strings "NaN", "Infinity" and "-Infinity". The
// encoding carries no types: DecodePartition takes them from the spec.
func EncodePartition(values map[int]any) (string, error) {
	ids := make([]int, 0, len(values))
	for id := range values {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(strconv.Itoa(id)))
		b.WriteByte(':')
		v, err := encodeValue(values[id])
		if err != nil {
			return "", fmt.Errorf("encode partition field %d: %w", id, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String(), nil
}

func encodeValue(v any) ([]byte, error) {
	if lit, ok := v.(iceberg.Literal); ok {
		v = lit.Any()
	}
	switch v := v.(type) {
	case nil:
		return []byte("null"), nil
	case bool:
		return strconv.AppendBool(nil, v), nil
	case int32:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(nil, v, 10), nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case iceberg.Date:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case iceberg.Time:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case iceberg.Timestamp:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case iceberg.TimestampNano:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case float32:
		return encodeFloat(float64(v), 32), nil
	case float64:
		return encodeFloat(v, 64), nil
	case string:
		return json.Marshal(v)
	case []byte:
		return json.Marshal(base64.StdEncoding.EncodeToString(v))
	case uuid.UUID:
		return json.Marshal(v.String())
	case iceberg.Decimal:
		return json.Marshal(v.String())
	}
	return nil, fmt.Errorf("unsupported partition value type %T", v)
}

func encodeFloat(f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`)
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`)
	}
	return strconv.AppendFloat(nil, f, 'g', -1, bits)
}

// DecodePartition decodes what EncodePartition wrote, for a file of a table
// with the given partition spec and schema, into the partition values that
// table.DataFileFromMetadata takes (DataFileArgs.PartitionValues):
//
//   - year, month, hour and bucket: int32
//   - day: int32 days since 1970-01-01
//   - identity and truncate: the source column's type: bool, int32, int64,
//     float32, float64, string, []byte (binary and fixed), uuid.UUID,
//     iceberg.Decimal, iceberg.Date, iceberg.Time, iceberg.Timestamp
//     (timestamp and timestamptz) or iceberg.TimestampNano
//   - a JSON null: nil
//
// Every field of the spec must be present and no other field may be; a
// mismatch means the file was written for another partition spec.
func DecodePartition(spec iceberg.PartitionSpec, schema *iceberg.Schema, s string) (map[int]any, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode partition %q: %w", s, err)
	}
	out := make(map[int]any, len(raw))
	for _, f := range spec.Fields() {
		key := strconv.Itoa(f.FieldID)
		msg, ok := raw[key]
		if !ok {
			return nil, fmt.Errorf("decode partition %q: no value for field %d (%s) of spec %d", s, f.FieldID, f.Name, spec.ID())
		}
		delete(raw, key)
		src, ok := schema.FindFieldByID(f.SourceID())
		if !ok {
			return nil, fmt.Errorf("decode partition %q: source column %d of field %s is not in the schema", s, f.SourceID(), f.Name)
		}
		v, err := decodeValue(msg, f.Transform, f.Transform.ResultType(src.Type))
		if err != nil {
			return nil, fmt.Errorf("decode partition %q: field %d (%s): %w", s, f.FieldID, f.Name, err)
		}
		out[f.FieldID] = v
	}
	for key := range raw {
		return nil, fmt.Errorf("decode partition %q: field %s is not in spec %d", s, key, spec.ID())
	}
	return out, nil
}

func decodeValue(msg json.RawMessage, tr iceberg.Transform, typ iceberg.Type) (any, error) {
	if string(msg) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	integer := func(bits int) (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Errorf("want an integer for %s, got %s", typ, msg)
		}
		i, err := strconv.ParseInt(n.String(), 10, bits)
		if err != nil {
			return 0, fmt.Errorf("want an integer for %s, got %s", typ, msg)
		}
		return i, nil
	}
	str := func() (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a string for %s, got %s", typ, msg)
		}
		return s, nil
	}
	switch t := typ.(type) {
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false for %s, got %s", typ, msg)
		}
		return b, nil
	case iceberg.Int32Type:
		i, err := integer(32)
		return int32(i), err
	case iceberg.Int64Type:
		return integer(64)
	case iceberg.DateType:
		i, err := integer(32)
		if err != nil {
			return nil, err
		}
		if _, ok := tr.(iceberg.DayTransform); ok {
			return int32(i), nil
		}
		return iceberg.Date(i), nil
	case iceberg.TimeType:
		i, err := integer(64)
		return iceberg.Time(i), err
	case iceberg.TimestampType, iceberg.TimestampTzType:
		i, err := integer(64)
		return iceberg.Timestamp(i), err
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		i, err := integer(64)
		return iceberg.TimestampNano(i), err
	case iceberg.Float32Type:
		f, err := decodeFloat(v, 32)
		return float32(f), err
	case iceberg.Float64Type:
		return decodeFloat(v, 64)
	case iceberg.StringType:
		return str()
	case iceberg.BinaryType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(s)
	case iceberg.FixedType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if len(b) != t.Len() {
			return nil, fmt.Errorf("want %d bytes for %s, got %d", t.Len(), typ, len(b))
		}
		return b, nil
	case iceberg.UUIDType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		return uuid.Parse(s)
	case iceberg.DecimalType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		n, err := decimal.Decimal128FromString(s, int32(t.Precision()), int32(t.Scale()))
		if err != nil {
			return nil, fmt.Errorf("want a %s, got %s: %w", typ, msg, err)
		}
		return iceberg.Decimal{Val: n, Scale: t.Scale()}, nil
	}
	return nil, fmt.Errorf("unsupported partition type %s", typ)
}

func decodeFloat(v any, bits int) (float64, error) {
	switch v := v.(type) {
	case json.Number:
		return strconv.ParseFloat(v.String(), bits)
	case string:
		switch v {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("want a number, got %v", v)
}
