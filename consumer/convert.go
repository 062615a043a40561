package consumer

// size: pending the move of the decoder into its own package (issue 15,
// "The house"), which splits this file by concept.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
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
	path  []string
	msg   string
	value any
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
		b.WriteString(renderValue(e.value, maxRenderedValue))
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
	return &convertError{msg: "cannot convert " + jsonKind(v) + " to " + c.typ.String() + ": " + reason, value: v}
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
		switch t := v.(type) {
		case string:
			return v, nil // already boxed: no new allocation
		case json.Number:
			return string(t), nil
		case float64:
			return formatFloat(t), nil
		case bool:
			if t {
				return "true", nil
			}
			return "false", nil
		}
	case kInt:
		n, reason := toInt64(v, 0)
		if reason != "" {
			return nil, convErr(c, v, reason)
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, convErr(c, v, "out of range")
		}
		return int32(n), nil
	case kLong:
		n, reason := toInt64(v, 0)
		if reason != "" {
			return nil, convErr(c, v, reason)
		}
		return n, nil
	case kFloat:
		f, reason := toFloat(v, 32)
		if reason != "" {
			return nil, convErr(c, v, reason)
		}
		return float32(f), nil
	case kDouble:
		f, reason := toFloat(v, 64)
		if reason != "" {
			return nil, convErr(c, v, reason)
		}
		return f, nil
	case kBool:
		switch v := v.(type) {
		case bool:
			return v, nil
		case string:
			switch v {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, convErr(c, v, `want "true" or "false"`)
		}
	case kDate:
		if s, ok := v.(string); ok {
			days, ok := parseDate(s)
			if !ok {
				return nil, convErr(c, v, "want YYYY-MM-DD or an RFC 3339 timestamp")
			}
			return arrow.Date32(days), nil
		}
	case kTime:
		if s, ok := v.(string); ok {
			us, ok := parseTimeOfDay(s)
			if !ok {
				return nil, convErr(c, v, "want HH:MM:SS[.ffffff]")
			}
			return arrow.Time64(us), nil
		}
	case kTimestamp, kTimestampNs:
		return c.convertTimestamp(v)
	case kDecimal:
		n, reason := toDecimal(v, c.prec, c.scale)
		if reason != "" {
			return nil, convErr(c, v, reason)
		}
		return n, nil
	case kBinary, kFixed:
		if s, ok := v.(string); ok {
			b, ok := decodeBase64(s)
			if !ok {
				return nil, convErr(c, v, "not base64")
			}
			if c.kind == kFixed && len(b) != c.size {
				return nil, convErr(c, v, "decoded length "+strconv.Itoa(len(b))+", want "+strconv.Itoa(c.size))
			}
			return b, nil
		}
	case kUUID:
		if s, ok := v.(string); ok {
			// uuid.Parse also takes urn:, braces and bare hex; only the
			// canonical 36-character form is accepted here.
			if len(s) != 36 {
				return nil, convErr(c, v, "want the canonical xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx form")
			}
			u, err := uuid.Parse(s)
			if err != nil {
				return nil, convErr(c, v, "want the canonical xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx form")
			}
			return u, nil
		}
	case kStruct:
		if m, ok := v.(map[string]any); ok {
			return c.convertStruct(m)
		}
	case kList:
		if a, ok := v.([]any); ok {
			return c.convertList(a)
		}
	case kMap:
		if m, ok := v.(map[string]any); ok {
			return c.convertMap(m)
		}
	}
	return nil, convErr(c, v, "unsupported JSON type")
}

func (c *converter) convertTimestamp(v any) (any, error) {
	switch v := v.(type) {
	case string:
		sec, nanos, ok := parseTimestamp(v)
		if !ok {
			return nil, convErr(c, v, "want an RFC 3339 timestamp")
		}
		// Sub-unit digits are truncated (floor), as nanosecond producers
		// writing to a microsecond column expect.
		var t int64
		if c.kind == kTimestampNs {
			// parseTimestamp limits years to 0000-9999, which does not fit
			// in int64 nanoseconds everywhere.
			if sec > (math.MaxInt64-999_999_999)/1_000_000_000 || sec < math.MinInt64/1_000_000_000 {
				return nil, convErr(c, v, "out of range for nanoseconds")
			}
			t = sec*1e9 + nanos
		} else {
			t = sec*1e6 + nanos/1000
		}
		return arrow.Timestamp(t), nil
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
			return nil, convErr(c, v, reason)
		}
		return arrow.Timestamp(n), nil
	}
	return nil, convErr(c, v, "unsupported JSON type")
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

// Reasons a number does not convert; the empty string means success.
const (
	reasonNotNumber = "not a JSON number"
	reasonFraction  = "has a fraction"
	reasonRange     = "out of range"
)

// numParts is a JSON number split into its parts without allocation:
// value = (intDigits fracDigits) * 10^(exp - len(fracDigits)).
type numParts struct {
	neg        bool
	intDigits  string
	fracDigits string
	exp        int
}

// maxExp caps parsed exponents; any non-zero value scaled by it is out of
// range for every type here, and it keeps exponent arithmetic from overflowing.
const maxExp = 1 << 30

// splitNumber checks s against the JSON number grammar and splits it.
func splitNumber(s string) (numParts, bool) {
	var p numParts
	i := 0
	if i < len(s) && s[i] == '-' {
		p.neg = true
		i++
	}
	start := i
	if i < len(s) && s[i] == '0' {
		i++
	} else {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i == start {
		return p, false
	}
	p.intDigits = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == fs {
			return p, false
		}
		p.fracDigits = s[fs:i]
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		e := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if e < maxExp {
				e = e*10 + int(s[i]-'0')
			}
			i++
		}
		if i == es {
			return p, false
		}
		e = min(e, maxExp)
		if eneg {
			e = -e
		}
		p.exp = e
	}
	return p, i == len(s)
}

// sig returns the significant digits of p as a range [first, last] over the
// concatenation intDigits+fracDigits, and the power of ten of the last one.
// ok is false when the value is zero.
func (p numParts) sig() (first, last, pow int, ok bool) {
	n := len(p.intDigits) + len(p.fracDigits)
	first, last = -1, -1
	for i := 0; i < n; i++ {
		if p.digit(i) != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0, 0, false
	}
	pow = p.exp - len(p.fracDigits) + (n - 1 - last)
	return first, last, pow, true
}

func (p numParts) digit(i int) uint64 {
	if i < len(p.intDigits) {
		return uint64(p.intDigits[i] - '0')
	}
	return uint64(p.fracDigits[i-len(p.intDigits)] - '0')
}

// int64Of returns p * 10^shift as an int64 when it is an exact integer.
func (p numParts) int64Of(shift int) (int64, string) {
	first, last, pow, ok := p.sig()
	if !ok {
		return 0, ""
	}
	pow += shift
	if pow < 0 {
		return 0, reasonFraction
	}
	nd := last - first + 1
	if nd+pow > 19 {
		return 0, reasonRange
	}
	var u uint64
	for i := first; i <= last; i++ {
		u = u*10 + p.digit(i)
	}
	for range pow {
		u *= 10 // nd+pow <= 19 digits fit in uint64
	}
	if p.neg {
		if u > 1<<63 {
			return 0, reasonRange
		}
		return int64(-u), "" // -(1<<63) wraps to MinInt64, as wanted
	}
	if u > math.MaxInt64 {
		return 0, reasonRange
	}
	return int64(u), ""
}

// toInt64 converts a JSON number, a float64 from go-jmespath, or a numeric
// string to an integer times 10^shift, exactly.
func toInt64(v any, shift int) (int64, string) {
	switch v := v.(type) {
	case json.Number:
		p, ok := splitNumber(string(v))
		if !ok {
			return 0, reasonNotNumber
		}
		return p.int64Of(shift)
	case string:
		p, ok := splitNumber(v)
		if !ok {
			return 0, reasonNotNumber
		}
		return p.int64Of(shift)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, reasonRange
		}
		var buf [32]byte
		p, ok := splitNumber(string(strconv.AppendFloat(buf[:0], v, 'e', -1, 64)))
		if !ok {
			return 0, reasonNotNumber
		}
		return p.int64Of(shift)
	}
	return 0, "unsupported JSON type"
}

// toFloat converts a JSON number or numeric string to a float of the given
// bit size. Strings may also be NaN, Inf, +Inf, -Inf, Infinity, +Infinity or
// -Infinity (any case), since JSON numbers cannot carry those values.
func toFloat(v any, bits int) (float64, string) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case float64:
		if bits == 32 && !math.IsInf(v, 0) && math.Abs(v) > math.MaxFloat32 {
			return 0, reasonRange
		}
		if bits == 32 {
			return float64(float32(v)), ""
		}
		return v, ""
	case string:
		if _, ok := splitNumber(v); !ok {
			switch strings.ToLower(v) {
			case "nan":
				return math.NaN(), ""
			case "inf", "+inf", "infinity", "+infinity":
				return math.Inf(1), ""
			case "-inf", "-infinity":
				return math.Inf(-1), ""
			}
			return 0, reasonNotNumber
		}
		s = v
	default:
		return 0, "unsupported JSON type"
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		return 0, reasonRange
	}
	return f, ""
}

// toDecimal converts a JSON number or numeric string exactly to a decimal of
// precision prec and scale scale. Trailing zeros beyond the scale are fine
// (1.500 fits decimal(4,2)); any other digit beyond it is an error, never
// rounded.
func toDecimal(v any, prec, scale int32) (decimal128.Num, string) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case string:
		s = v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return decimal128.Num{}, reasonRange
		}
		var buf [32]byte
		s = string(strconv.AppendFloat(buf[:0], v, 'e', -1, 64))
	default:
		return decimal128.Num{}, "unsupported JSON type"
	}
	p, ok := splitNumber(s)
	if !ok {
		return decimal128.Num{}, reasonNotNumber
	}
	first, last, pow, ok := p.sig()
	if !ok {
		return decimal128.Num{}, ""
	}
	pow += int(scale)
	if pow < 0 {
		return decimal128.Num{}, "more than " + strconv.Itoa(int(scale)) + " fraction digits"
	}
	nd := last - first + 1
	if nd+pow > int(prec) {
		return decimal128.Num{}, "more than " + strconv.Itoa(int(prec)) + " digits"
	}
	var n decimal128.Num
	var chunk uint64
	digits := 0
	for i := first; i <= last; i++ {
		chunk = chunk*10 + p.digit(i)
		digits++
		if digits == 18 || i == last {
			n = n.Mul(decimal128.GetScaleMultiplier(digits)).Add(decimal128.FromU64(chunk))
			chunk, digits = 0, 0
		}
	}
	if pow > 0 {
		n = n.Mul(decimal128.GetScaleMultiplier(pow))
	}
	if p.neg {
		n = n.Negate()
	}
	return n, ""
}

// formatFloat writes a float64 the way encoding/json does, except that
// NaN and infinities (which only go-jmespath arithmetic can produce) are
// written as NaN, +Inf and -Inf.
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7, as JSON writers do.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	return s
}

func decodeBase64(s string) ([]byte, bool) {
	// Standard alphabet with padding first (the common case), then the URL
	// alphabet and unpadded forms.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

func digits2(s string, i int) (int, bool) {
	if i+2 > len(s) {
		return 0, false
	}
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return 0, false
	}
	return int(a)*10 + int(b), true
}

// parseYMD parses YYYY-MM-DD at the start of s.
func parseYMD(s string) (y, m, d int, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	hi, ok1 := digits2(s, 0)
	lo, ok2 := digits2(s, 2)
	m, ok3 := digits2(s, 5)
	d, ok4 := digits2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 || m < 1 || m > 12 || d < 1 {
		return 0, 0, 0, false
	}
	y = hi*100 + lo
	if d > daysIn(y, m) {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// parseClock parses HH:MM:SS[.fraction] at the start of s and returns the
// seconds since midnight, the fraction in nanoseconds (digits beyond the
// ninth are dropped) and the rest of s.
func parseClock(s string) (sec int64, nanos int64, rest string, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, "", false
	}
	hh, ok1 := digits2(s, 0)
	mm, ok2 := digits2(s, 3)
	ss, ok3 := digits2(s, 6)
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return 0, 0, "", false
	}
	i := 8
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		scale := int64(100_000_000)
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			nanos += int64(s[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start {
			return 0, 0, "", false
		}
	}
	return int64(hh*3600 + mm*60 + ss), nanos, s[i:], true
}

func epochDays(y, m, d int) int64 {
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// parseTimestamp parses an RFC 3339 timestamp: YYYY-MM-DD, then optionally
// T (or t or a space) and HH:MM:SS[.fraction], then optionally Z or ±HH:MM.
// A date alone is midnight; no zone means UTC. It returns the UTC instant as
// seconds since the epoch and nanoseconds within the second.
func parseTimestamp(s string) (sec, nanos int64, ok bool) {
	y, m, d, ok := parseYMD(s)
	if !ok {
		return 0, 0, false
	}
	sec = epochDays(y, m, d) * 86400
	if len(s) == 10 {
		return sec, 0, true
	}
	if s[10] != 'T' && s[10] != 't' && s[10] != ' ' {
		return 0, 0, false
	}
	clock, nanos, rest, ok := parseClock(s[11:])
	if !ok {
		return 0, 0, false
	}
	sec += clock
	switch {
	case rest == "":
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits2(rest, 1)
		om, ok2 := digits2(rest, 4)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		off := int64(oh*3600 + om*60)
		if rest[0] == '+' {
			sec -= off
		} else {
			sec += off
		}
	default:
		return 0, 0, false
	}
	return sec, nanos, true
}

// parseDate parses YYYY-MM-DD or an RFC 3339 timestamp; a timestamp gives
// the date of its UTC instant.
func parseDate(s string) (int32, bool) {
	if len(s) == 10 {
		y, m, d, ok := parseYMD(s)
		if !ok {
			return 0, false
		}
		return int32(epochDays(y, m, d)), true
	}
	sec, _, ok := parseTimestamp(s)
	if !ok {
		return 0, false
	}
	days := sec / 86400
	if sec%86400 < 0 {
		days--
	}
	return int32(days), true
}

// parseTimeOfDay parses HH:MM:SS[.fraction] into microseconds since midnight.
func parseTimeOfDay(s string) (int64, bool) {
	sec, nanos, rest, ok := parseClock(s)
	if !ok || rest != "" {
		return 0, false
	}
	return sec*1e6 + nanos/1000, true
}

// maxRenderedValue bounds the offending value quoted in error messages.
const maxRenderedValue = 64

// renderValue writes v as JSON text, cut after about limit bytes.
func renderValue(v any, limit int) string {
	var b strings.Builder
	renderTo(&b, v, limit)
	s := b.String()
	if len(s) > limit {
		// Cut on a rune boundary.
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func renderTo(b *strings.Builder, v any, limit int) {
	if b.Len() > limit {
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		if len(v) > limit {
			v = v[:limit+1]
		}
		b.WriteString(strconv.Quote(v))
	case json.Number:
		if len(v) > limit {
			v = v[:limit+1]
		}
		b.WriteString(string(v))
	case float64:
		b.WriteString(formatFloat(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if b.Len() > limit {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			renderTo(b, e, limit)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if b.Len() > limit {
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			renderTo(b, k, limit)
			b.WriteByte(':')
			renderTo(b, v[k], limit)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// ArrowSchema is the Arrow schema of the table's Parquet files: the one
// iceberg-go derives, with Iceberg field IDs and without large types. The
// segment writer builds its RecordBuilder from it, and AppendRow expects
// exactly the builders it gives (string, binary, list: not the large
// variants; uuid: the arrow uuid extension type; timestamps in microseconds).
func ArrowSchema(schema *iceberg.Schema) (*arrow.Schema, error) {
	s, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("convert iceberg schema to arrow: %w", err)
	}
	return s, nil
}

// AppendRow appends one decoded row to b, whose schema must be
// ArrowSchema of the schema the row was decoded with. Every Row returned by
// Decoder.Decode can be appended. A row that does not match the builder (a
// wrong length or a value of the wrong Go type, which only hand-built rows
// can have) is a programming error and panics.
func AppendRow(b *array.RecordBuilder, row Row) {
	fields := b.Fields()
	if len(row) != len(fields) {
		panic(fmt.Sprintf("consumer: AppendRow: row has %d values, builder has %d fields", len(row), len(fields)))
	}
	for i, fb := range fields {
		appendValue(fb, row[i])
	}
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
			panic(fmt.Sprintf("consumer: AppendRow: struct value has %d fields, builder has %d", len(vals), b.NumField()))
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
		m := v.(MapValue)
		if len(m.Keys) != len(m.Values) {
			panic(fmt.Sprintf("consumer: AppendRow: map value has %d keys and %d values", len(m.Keys), len(m.Values)))
		}
		b.Append(true)
		kb, ib := b.KeyBuilder(), b.ItemBuilder()
		for i := range m.Keys {
			appendValue(kb, m.Keys[i])
			appendValue(ib, m.Values[i])
		}
	default:
		panic(fmt.Sprintf("consumer: AppendRow: unsupported builder %T for %s", b, b.Type()))
	}
}
