package decode

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

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
		if n, ok := plainInt(string(v), shift); ok {
			return n, ""
		}
		p, ok := splitNumber(string(v))
		if !ok {
			return 0, reasonNotNumber
		}
		return p.int64Of(shift)
	case string:
		if n, ok := plainInt(v, shift); ok {
			return n, ""
		}
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

// plainInt reads the usual integer text (an optional minus and up to 18
// digits, without a leading zero) times 10^shift in one pass, when the
// result fits in 18 digits; anything else (fractions, exponents, longer
// numbers, what is not a number) is left to splitNumber and int64Of, which
// give the same value or the error. Most integers of real events are
// plain, and splitting them first read their digits three times.
func plainInt(s string, shift int) (int64, bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	digits := len(s) - i
	if digits == 0 || digits+shift > 18 || (s[i] == '0' && digits > 1) {
		return 0, false
	}
	var n int64
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	for range shift {
		n *= 10
	}
	if s[0] == '-' {
		n = -n
	}
	return n, true
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
