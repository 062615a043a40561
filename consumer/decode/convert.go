package decode

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// kind is the Iceberg type a converter produces.
type kind uint8

const (
	kString kind = iota
	kInt
	kLong
	kFloat
	kDouble
	kBool
	kDate
	kTime
	kTimestamp   // timestamp and timestamptz, microseconds
	kTimestampNs // timestamp_ns and timestamptz_ns, nanoseconds
	kDecimal
	kBinary
	kFixed
	kUUID
	kStruct
	kList
	kMap
)

// converter turns one JSON value (as produced by the parser or by go-jmespath:
// nil, bool, string, json.Number, float64, map[string]any, []any) into the
// Row representation of one Iceberg type. It is built once per schema.
type converter struct {
	kind  kind
	typ   iceberg.Type
	size  int   // fixed[size]
	prec  int32 // decimal precision
	scale int32 // decimal scale

	fields []structField // struct

	elem         *converter // list element
	elemRequired bool

	key         *converter // map key, converted from the JSON object key string
	val         *converter // map value
	valRequired bool
}

type structField struct {
	name     string
	required bool
	conv     *converter
}

// newConverter compiles the converter for an Iceberg type; path names the
// field in errors.
func newConverter(t iceberg.Type, path string) (*converter, error) {
	c := &converter{typ: t}
	switch t := t.(type) {
	case iceberg.StringType:
		c.kind = kString
	case iceberg.Int32Type:
		c.kind = kInt
	case iceberg.Int64Type:
		c.kind = kLong
	case iceberg.Float32Type:
		c.kind = kFloat
	case iceberg.Float64Type:
		c.kind = kDouble
	case iceberg.BooleanType:
		c.kind = kBool
	case iceberg.DateType:
		c.kind = kDate
	case iceberg.TimeType:
		c.kind = kTime
	case iceberg.TimestampType, iceberg.TimestampTzType:
		c.kind = kTimestamp
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		c.kind = kTimestampNs
	case iceberg.DecimalType:
		c.kind = kDecimal
		c.prec, c.scale = int32(t.Precision()), int32(t.Scale())
	case iceberg.BinaryType:
		c.kind = kBinary
	case iceberg.FixedType:
		c.kind = kFixed
		c.size = t.Len()
	case iceberg.UUIDType:
		c.kind = kUUID
	case *iceberg.StructType:
		c.kind = kStruct
		for _, f := range t.FieldList {
			fc, err := newConverter(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			c.fields = append(c.fields, structField{name: f.Name, required: f.Required, conv: fc})
		}
	case *iceberg.ListType:
		c.kind = kList
		ec, err := newConverter(t.Element, path+"[]")
		if err != nil {
			return nil, err
		}
		c.elem, c.elemRequired = ec, t.ElementRequired
	case *iceberg.MapType:
		c.kind = kMap
		kc, err := newConverter(t.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		switch kc.kind {
		case kStruct, kList, kMap:
			return nil, fmt.Errorf("column %s: map key type %s cannot come from a JSON object key", path, t.KeyType)
		}
		vc, err := newConverter(t.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		c.key, c.val, c.valRequired = kc, vc, t.ValueRequired
	default:
		return nil, fmt.Errorf("column %s: type %s is not supported by the JSON decoder", path, t)
	}
	return c, nil
}

// convertError is a conversion failure inside one column; path holds the
// nested field names and indexes from the innermost outwards.
type convertError struct {
	path []string
	msg  string
	// value is the offending value rendered when the error was made: the
	// JSON value may share its bytes with a payload the caller reuses
	// (DecodeInto), while the error is logged and dead-lettered later.
	value string
}

func (e *convertError) Error() string {
	var b strings.Builder
	if len(e.path) > 0 {
		for i := len(e.path) - 1; i >= 0; i-- {
			b.WriteString(e.path[i])
		}
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	if e.msg != msgMissingField {
		b.WriteString(" (value ")
		b.WriteString(e.value)
		b.WriteString(")")
	}
	return b.String()
}

const msgMissingField = "required field is missing or null"

// within prefixes the error's path with one more level.
func within(err error, seg string) error {
	if ce, ok := err.(*convertError); ok {
		ce.path = append(ce.path, seg)
	}
	return err
}

func convErr(c *converter, v any, reason string) error {
	return &convertError{msg: "cannot convert " + jsonKind(v) + " to " + c.typ.String() + ": " + reason, value: renderValue(v, maxRenderedValue)}
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "JSON boolean"
	case string:
		return "JSON string"
	case json.Number, float64:
		return "JSON number"
	case map[string]any:
		return "JSON object"
	case []any:
		return "JSON array"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// convert converts a non-null JSON value. Nulls are handled by the caller,
// which knows whether the place is required.
func (c *converter) convert(v any) (any, error) {
	switch c.kind {
	case kString:
		if _, ok := v.(string); ok {
			return v, nil // already boxed: no new allocation
		}
	case kStruct:
		if m, ok := v.(map[string]any); ok {
			return c.convertStruct(m)
		}
		return nil, convErr(c, v, reasonUnsupported)
	case kList:
		if a, ok := v.([]any); ok {
			return c.convertList(a)
		}
		return nil, convErr(c, v, reasonUnsupported)
	case kMap:
		if m, ok := v.(map[string]any); ok {
			return c.convertMap(m)
		}
		return nil, convErr(c, v, reasonUnsupported)
	}
	out, reason := c.scalar(v, nil)
	if reason != "" {
		return nil, convErr(c, v, reason)
	}
	return out, nil
}

// primitive reports whether the type is neither struct, list nor map:
// scalar converts its values.
func (c *converter) primitive() bool {
	return c.kind != kStruct && c.kind != kList && c.kind != kMap
}

// reasonUnsupported is the reason of a JSON value of a type the column's
// type does not convert from.
const reasonUnsupported = "unsupported JSON type"

// scalar converts a non-null JSON value to a primitive type (every kind
// but struct, list and map), or returns why it cannot, for convert to
// make the error of. It never keeps v, not even in its result, so a
// caller passing a value it has not boxed yet (the reader's capture of a
// string or a number) boxes it on its stack: only the result is boxed
// on the heap, in a cell of box when box is not nil.
func (c *converter) scalar(v any, box *cells) (any, string) {
	switch c.kind {
	case kString:
		switch t := v.(type) {
		case string:
			return box.str(t), ""
		case json.Number:
			return box.str(string(t)), ""
		case float64:
			return formatFloat(t), ""
		case bool:
			if t {
				return "true", ""
			}
			return "false", ""
		}
	case kInt:
		n, reason := toInt64(v, 0)
		if reason != "" {
			return nil, reason
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, reasonRange
		}
		if interned(n) {
			return int32(n), ""
		}
		return boxWord(box, typeInt32, int32(n)), ""
	case kLong:
		n, reason := toInt64(v, 0)
		if reason != "" {
			return nil, reason
		}
		if interned(n) {
			return n, ""
		}
		return boxWord(box, typeInt64, n), ""
	case kFloat:
		f, reason := toFloat(v, 32)
		if reason != "" {
			return nil, reason
		}
		return boxWord(box, typeFloat32, float32(f)), ""
	case kDouble:
		f, reason := toFloat(v, 64)
		if reason != "" {
			return nil, reason
		}
		return boxWord(box, typeFloat64, f), ""
	case kBool:
		switch t := v.(type) {
		case bool:
			return t, ""
		case string:
			switch t {
			case "true":
				return true, ""
			case "false":
				return false, ""
			}
			return nil, `want "true" or "false"`
		}
	case kDate:
		if s, ok := v.(string); ok {
			days, ok := parseDate(s)
			if !ok {
				return nil, "want YYYY-MM-DD or an RFC 3339 timestamp"
			}
			return boxWord(box, typeDate32, arrow.Date32(days)), ""
		}
	case kTime:
		if s, ok := v.(string); ok {
			us, ok := parseTimeOfDay(s)
			if !ok {
				return nil, "want HH:MM:SS[.ffffff]"
			}
			return boxWord(box, typeTime64, arrow.Time64(us)), ""
		}
	case kTimestamp, kTimestampNs:
		return c.timestamp(v, box)
	case kDecimal:
		n, reason := toDecimal(v, c.prec, c.scale)
		if reason != "" {
			return nil, reason
		}
		return n, ""
	case kBinary, kFixed:
		if s, ok := v.(string); ok {
			b, ok := decodeBase64(s)
			if !ok {
				return nil, "not base64"
			}
			if c.kind == kFixed && len(b) != c.size {
				return nil, "decoded length " + strconv.Itoa(len(b)) + ", want " + strconv.Itoa(c.size)
			}
			return box.bytes(b), ""
		}
	case kUUID:
		if s, ok := v.(string); ok {
			// uuid.Parse also takes urn:, braces and bare hex; only the
			// canonical 36-character form is accepted here.
			if len(s) != 36 {
				return nil, "want the canonical xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx form"
			}
			u, err := uuid.Parse(s)
			if err != nil {
				return nil, "want the canonical xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx form"
			}
			return u, ""
		}
	}
	return nil, reasonUnsupported
}

// timestamp is scalar for the timestamp kinds.
func (c *converter) timestamp(v any, box *cells) (any, string) {
	switch v := v.(type) {
	case string:
		sec, nanos, ok := parseTimestamp(v)
		if !ok {
			return nil, "want an RFC 3339 timestamp"
		}
		// Sub-unit digits are truncated (floor), as nanosecond producers
		// writing to a microsecond column expect.
		var t int64
		if c.kind == kTimestampNs {
			// parseTimestamp limits years to 0000-9999, which does not fit
			// in int64 nanoseconds everywhere.
			if sec > (math.MaxInt64-999_999_999)/1_000_000_000 || sec < math.MinInt64/1_000_000_000 {
				return nil, "out of range for nanoseconds"
			}
			t = sec*1e9 + nanos
		} else {
			t = sec*1e6 + nanos/1000
		}
		return boxWord(box, typeTimestamp, arrow.Timestamp(t)), ""
	case json.Number, float64:
		// A JSON number is epoch milliseconds; fractional milliseconds are
		// accepted down to the column's unit.
		shift := 3
		if c.kind == kTimestampNs {
			shift = 6
		}
		n, reason := toInt64(v, shift)
		if reason != "" {
			if reason == reasonFraction {
				reason = "epoch milliseconds more precise than the column"
			}
			return nil, reason
		}
		return boxWord(box, typeTimestamp, arrow.Timestamp(n)), ""
	}
	return nil, reasonUnsupported
}

func (c *converter) convertStruct(m map[string]any) (any, error) {
	out := make([]any, len(c.fields))
	for i := range c.fields {
		f := &c.fields[i]
		fv := m[f.name]
		if fv == nil {
			if f.required {
				return nil, &convertError{msg: msgMissingField, path: []string{"." + f.name}}
			}
			continue
		}
		cv, err := f.conv.convert(fv)
		if err != nil {
			return nil, within(err, "."+f.name)
		}
		out[i] = cv
	}
	return out, nil
}

func (c *converter) convertList(a []any) (any, error) {
	out := make([]any, len(a))
	for i, ev := range a {
		if ev == nil {
			if c.elemRequired {
				return nil, &convertError{msg: msgMissingField, path: []string{"[" + strconv.Itoa(i) + "]"}}
			}
			continue
		}
		cv, err := c.elem.convert(ev)
		if err != nil {
			return nil, within(err, "["+strconv.Itoa(i)+"]")
		}
		out[i] = cv
	}
	return out, nil
}

// convertMap converts a JSON object to a MapValue with its entries sorted by
// the JSON key, so that the same document always gives the same file.
func (c *converter) convertMap(m map[string]any) (any, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := MapValue{Keys: make([]any, len(keys)), Values: make([]any, len(keys))}
	for i, k := range keys {
		kv, err := c.key.convert(k)
		if err != nil {
			return nil, within(err, "["+strconv.Quote(k)+"]")
		}
		out.Keys[i] = kv
		vv := m[k]
		if vv == nil {
			if c.valRequired {
				return nil, &convertError{msg: msgMissingField, path: []string{"[" + strconv.Quote(k) + "]"}}
			}
			continue
		}
		cv, err := c.val.convert(vv)
		if err != nil {
			return nil, within(err, "["+strconv.Quote(k)+"]")
		}
		out.Values[i] = cv
	}
	return out, nil
}

func decodeBase64(s string) ([]byte, bool) {
	// Standard alphabet with padding first (the common case), then the URL
	// alphabet and unpadded forms, all into one buffer: the unpadded length
	// bounds every form's. DecodeString allocated a buffer per attempt.
	buf := make([]byte, base64.RawStdEncoding.DecodedLen(len(s)))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if n, err := enc.Decode(buf, unsafe.Slice(unsafe.StringData(s), len(s))); err == nil {
			return buf[:n:n], true
		}
	}
	return nil, false
}
