package bloom

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/google/uuid"
)

// Layouts of the canonical encodings (see the package doc).
const (
	dateLayout    = "2006-01-02"
	timeLayout    = "15:04:05.000000"
	tsLayout      = "2006-01-02T15:04:05.000000Z"
	tsNanosLayout = "2006-01-02T15:04:05.000000000Z"
)

// AppendValue appends the canonical encoding of row i of arr to dst. ok is
// false for a null, which a filter does not hold. A column type without a
// canonical encoding (lists, maps, structs...) is an error.
func AppendValue(dst []byte, arr arrow.Array, i int) (out []byte, ok bool, err error) {
	if arr.IsNull(i) {
		return dst, false, nil
	}
	switch a := arr.(type) {
	case *array.String:
		return append(dst, a.Value(i)...), true, nil
	case *array.LargeString:
		return append(dst, a.Value(i)...), true, nil
	case *array.StringView:
		return append(dst, a.Value(i)...), true, nil
	case *array.Binary:
		return append(dst, a.Value(i)...), true, nil
	case *array.LargeBinary:
		return append(dst, a.Value(i)...), true, nil
	case *array.BinaryView:
		return append(dst, a.Value(i)...), true, nil
	case *array.FixedSizeBinary:
		return append(dst, a.Value(i)...), true, nil
	case *extensions.UUIDArray:
		u := a.Value(i)
		return append(dst, u[:]...), true, nil
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i)), true, nil
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true, nil
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true, nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true, nil
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), true, nil
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true, nil
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true, nil
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true, nil
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), true, nil
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32), true, nil
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64), true, nil
	case *array.Date32:
		return a.Value(i).ToTime().AppendFormat(dst, dateLayout), true, nil
	case *array.Date64:
		return a.Value(i).ToTime().AppendFormat(dst, dateLayout), true, nil
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return a.Value(i).ToTime(unit).AppendFormat(dst, timeLayout), true, nil
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return a.Value(i).ToTime(unit).AppendFormat(dst, timeLayout), true, nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(i).ToTime(unit).UTC()
		if unit == arrow.Nanosecond {
			return t.AppendFormat(dst, tsNanosLayout), true, nil
		}
		return t.AppendFormat(dst, tsLayout), true, nil
	case *array.Decimal32:
		scale := a.DataType().(arrow.DecimalType).GetScale()
		return appendDecimal(dst, big.NewInt(int64(a.Value(i))), scale)
	case *array.Decimal64:
		scale := a.DataType().(arrow.DecimalType).GetScale()
		return appendDecimal(dst, big.NewInt(int64(a.Value(i))), scale)
	case *array.Decimal128:
		scale := a.DataType().(arrow.DecimalType).GetScale()
		return appendDecimal(dst, a.Value(i).BigInt(), scale)
	case *array.Decimal256:
		scale := a.DataType().(arrow.DecimalType).GetScale()
		return appendDecimal(dst, a.Value(i).BigInt(), scale)
	case *array.Dictionary:
		return AppendValue(dst, a.Dictionary(), a.GetValueIndex(i))
	}
	return dst, false, fmt.Errorf("bloom filters do not support column type %s", arr.DataType())
}

func appendFloat(dst []byte, f float64, bits int) []byte {
	if f == 0 {
		f = 0 // -0 and 0 are equal values
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func appendDecimal(dst []byte, unscaled *big.Int, scale int32) ([]byte, bool, error) {
	if scale < 0 {
		return dst, false, fmt.Errorf("decimal scale %d: bloom filters need a scale of 0 or more", scale)
	}
	return append(dst, formatDecimal(unscaled, int(scale))...), true, nil
}

// formatDecimal writes unscaled × 10^-scale with exactly scale fraction
// digits.
func formatDecimal(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	s := digits
	if scale > 0 {
		s = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// QueryValue returns the canonical encoding of a value written as text,
// for a column of the Iceberg type typ (as Iceberg prints it: string, int,
// long, boolean, float, double, decimal(P,S), date, time, timestamp,
// timestamptz, timestamp_ns, timestamptz_ns, uuid, fixed[N], binary).
// Binary and fixed values are written in hex.
func QueryValue(typ, text string) ([]byte, error) {
	t := strings.ToLower(strings.ReplaceAll(typ, " ", ""))
	if t == "string" {
		return []byte(text), nil // strings are compared byte for byte, spaces included
	}
	s := strings.TrimSpace(text)
	bad := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("value %q for a %s column: %w", text, typ, err)
	}
	switch {
	case t == "int" || t == "long":
		bits := 64
		if t == "int" {
			bits = 32
		}
		v, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return bad(err)
		}
		return strconv.AppendInt(nil, v, 10), nil
	case t == "boolean":
		v, err := strconv.ParseBool(s)
		if err != nil {
			return bad(err)
		}
		return strconv.AppendBool(nil, v), nil
	case t == "float" || t == "double":
		bits := 64
		if t == "float" {
			bits = 32
		}
		v, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return bad(err)
		}
		return appendFloat(nil, v, bits), nil
	case strings.HasPrefix(t, "decimal("):
		prec, scale, err := parseDecimalType(t)
		if err != nil {
			return nil, fmt.Errorf("column type %q: %w", typ, err)
		}
		v, err := parseDecimal(s, prec, scale)
		if err != nil {
			return bad(err)
		}
		return []byte(v), nil
	case t == "date":
		d, err := time.Parse(dateLayout, s)
		if err != nil {
			return bad(err)
		}
		return d.AppendFormat(nil, dateLayout), nil
	case t == "time":
		v, err := parseTime(s)
		if err != nil {
			return bad(err)
		}
		return v.AppendFormat(nil, timeLayout), nil
	case t == "timestamp" || t == "timestamptz":
		v, err := parseTimestamp(s, 6)
		if err != nil {
			return bad(err)
		}
		return v.AppendFormat(nil, tsLayout), nil
	case t == "timestamp_ns" || t == "timestamptz_ns":
		v, err := parseTimestamp(s, 9)
		if err != nil {
			return bad(err)
		}
		return v.AppendFormat(nil, tsNanosLayout), nil
	case t == "uuid":
		u, err := uuid.Parse(s)
		if err != nil {
			return bad(err)
		}
		return u[:], nil
	case t == "binary" || strings.HasPrefix(t, "fixed["):
		b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
		if err != nil {
			return bad(fmt.Errorf("want hex: %w", err))
		}
		if t != "binary" {
			var n int
			if _, err := fmt.Sscanf(t, "fixed[%d]", &n); err != nil {
				return nil, fmt.Errorf("column type %q: %w", typ, err)
			}
			if len(b) != n {
				return bad(fmt.Errorf("%d bytes, the column holds %d", len(b), n))
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("bloom filters do not support column type %q", typ)
}

func parseDecimalType(t string) (prec, scale int, err error) {
	if _, err := fmt.Sscanf(t, "decimal(%d,%d)", &prec, &scale); err != nil {
		return 0, 0, err
	}
	if prec < 1 || scale < 0 || scale > prec {
		return 0, 0, fmt.Errorf("precision %d and scale %d", prec, scale)
	}
	return prec, scale, nil
}

// parseDecimal reads [+-]digits[.digits] and writes it with exactly scale
// fraction digits. Extra fraction digits must be zeros: 1.234 cannot equal
// any decimal(9,2) value.
func parseDecimal(s string, prec, scale int) (string, error) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return "", fmt.Errorf("not a decimal number")
	}
	if extra := strings.TrimRight(frac[min(len(frac), scale):], "0"); extra != "" {
		return "", fmt.Errorf("more than %d digits after the point", scale)
	}
	frac = frac[:min(len(frac), scale)] + strings.Repeat("0", max(0, scale-len(frac)))
	unscaled, ok := new(big.Int).SetString("0"+whole+frac, 10)
	if !ok {
		return "", fmt.Errorf("not a decimal number")
	}
	if len(unscaled.String()) > prec && unscaled.Sign() != 0 {
		return "", fmt.Errorf("more than %d digits", prec)
	}
	if neg {
		unscaled.Neg(unscaled)
	}
	return formatDecimal(unscaled, scale), nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseTime reads 15:04:05 with an optional fraction of up to
// microseconds.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse("15:04:05", s)
	if err != nil {
		return time.Time{}, err
	}
	if t.Nanosecond()%1000 != 0 {
		return time.Time{}, fmt.Errorf("more than 6 fraction digits")
	}
	return t, nil
}

// parseTimestamp reads an RFC 3339 timestamp; a "T" or a space between date
// and time; no zone meaning UTC; or a date alone meaning its midnight UTC.
// A fraction finer than digits digits is an error rather than rounded.
func parseTimestamp(s string, digits int) (time.Time, error) {
	layouts := []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999",
		dateLayout,
	}
	for _, l := range layouts {
		t, err := time.Parse(l, s)
		if err != nil {
			continue
		}
		unit := time.Duration(math.Pow10(9 - digits))
		if t.Nanosecond()%int(unit) != 0 {
			return time.Time{}, fmt.Errorf("more than %d fraction digits", digits)
		}
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 timestamp such as 2006-01-02T15:04:05.123456Z")
}
