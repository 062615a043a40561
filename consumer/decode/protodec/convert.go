package protodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// out is the Go type a conv produces, one per Iceberg type.
type out uint8

const (
	outInt32 out = iota + 1
	outInt64
	outFloat32
	outFloat64
	outBool
	outDecimal
	outString
	outBinary
	outFixed
	outUUID
	outTimestampUs
	outTimestampNs
	outDate
	outStruct
	outList
	outMap
)

// shape is how a value sits on the wire: a scalar of the field's kind, or
// one of the messages read as a scalar.
type shape uint8

const (
	shapeScalar shape = iota
	shapeTimestamp
	shapeDate
	shapeDecimal
	shapeWrapper
	shapeMessage
)

// conv reads one protobuf value of a field and converts it to a column's
// (or a struct field's, a list element's, a map key's) Go value.
type conv struct {
	// col is the top-level column and path the place of the value in it
	// (col.sub.field, col[], col{key}), for errors.
	col, path string
	kind      protoreflect.Kind
	wire      protowire.Type
	shape     shape
	out       out
	// isList and isMap: the field repeats; each occurrence appends one
	// element (elem) or one entry (key, val) to the value.
	isList, isMap bool
	elem          *conv
	key, val      *conv
	// inner reads field 1 of a wrapper message.
	inner *conv
	// st reads a message into a struct.
	st *plan
	// precision and scale of a decimal column, length of a fixed one.
	precision, scale int32
	fixedLen         int
	enum             protoreflect.EnumValueDescriptors
	// zero is the value of an absent field without presence: the
	// field's zero value, converted; an empty list or map. nil for
	// fields with presence.
	zero any
}

// convertError is a value that does not convert to its column's type.
type convertError struct {
	col, path string
	err       error
}

func (e *convertError) Error() string { return fmt.Sprintf("%s: %v", e.path, e.err) }

func (c *conv) errorf(format string, args ...any) error {
	return &convertError{col: c.col, path: c.path, err: fmt.Errorf(format, args...)}
}

// errWire is a payload that is not protobuf wire format, or not of the
// schema's message.
type wireError struct{ err error }

func (e *wireError) Error() string { return e.err.Error() }

func wireErr(n int) error { return &wireError{protowire.ParseError(n)} }

func wireKind(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// scalarOut tells which column type a scalar kind converts to, and sets
// c.out; an incompatible pair is an error of New.
func (c *conv) scalarOut(t iceberg.Type) error {
	k := c.kind
	signed32 := k == protoreflect.Int32Kind || k == protoreflect.Sint32Kind || k == protoreflect.Sfixed32Kind
	integer := signed32 || k == protoreflect.Int64Kind || k == protoreflect.Sint64Kind || k == protoreflect.Sfixed64Kind ||
		k == protoreflect.Uint32Kind || k == protoreflect.Fixed32Kind || k == protoreflect.Uint64Kind || k == protoreflect.Fixed64Kind
	ok := false
	switch t := t.(type) {
	case iceberg.Int32Type:
		c.out, ok = outInt32, signed32 || k == protoreflect.EnumKind
	case iceberg.Int64Type:
		c.out, ok = outInt64, integer || k == protoreflect.EnumKind
	case iceberg.Float32Type:
		c.out, ok = outFloat32, k == protoreflect.FloatKind
	case iceberg.Float64Type:
		c.out, ok = outFloat64, k == protoreflect.FloatKind || k == protoreflect.DoubleKind
	case iceberg.BooleanType:
		c.out, ok = outBool, k == protoreflect.BoolKind
	case iceberg.DecimalType:
		c.out, ok = outDecimal, integer || k == protoreflect.StringKind
		c.precision, c.scale = int32(t.Precision()), int32(t.Scale())
	case iceberg.StringType:
		c.out, ok = outString, k == protoreflect.StringKind || k == protoreflect.EnumKind
	case iceberg.BinaryType:
		c.out, ok = outBinary, k == protoreflect.BytesKind || k == protoreflect.StringKind
	case iceberg.FixedType:
		c.out, ok = outFixed, k == protoreflect.BytesKind
		c.fixedLen = t.Len()
	case iceberg.UUIDType:
		c.out, ok = outUUID, k == protoreflect.BytesKind || k == protoreflect.StringKind
	}
	if !ok {
		return fmt.Errorf("column %q: protobuf %s %s does not convert to %s", c.col, c.kind, c.path, t)
	}
	return nil
}

// bits converts a varint or fixed-width value of c's kind.
func (c *conv) bits(x uint64) (any, error) {
	var i int64
	switch c.kind {
	case protoreflect.BoolKind:
		return x != 0, nil
	case protoreflect.FloatKind:
		f := math.Float32frombits(uint32(x))
		if c.out == outFloat32 {
			return f, nil
		}
		return float64(f), nil
	case protoreflect.DoubleKind:
		return math.Float64frombits(x), nil
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		i = int64(int32(x))
	case protoreflect.Sint32Kind:
		i = int64(int32(protowire.DecodeZigZag(x & math.MaxUint32)))
	case protoreflect.Sfixed32Kind:
		i = int64(int32(uint32(x)))
	case protoreflect.Sint64Kind:
		i = protowire.DecodeZigZag(x)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		i = int64(uint32(x))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if x > math.MaxInt64 {
			if c.out == outDecimal {
				return c.decimal(decimal128.FromU64(x), 0, strconv.FormatUint(x, 10))
			}
			return nil, c.errorf("%d does not fit a long", x)
		}
		i = int64(x)
	default: // int64, sfixed64
		i = int64(x)
	}
	switch c.out {
	case outInt32:
		return int32(i), nil
	case outInt64:
		return i, nil
	case outDecimal:
		return c.decimal(decimal128.FromI64(i), 0, strconv.FormatInt(i, 10))
	}
	// outString of an enum: its value's name, or the number of a value
	// the schema does not know (proto3 enums are open).
	if v := c.enum.ByNumber(protoreflect.EnumNumber(i)); v != nil {
		return string(v.Name()), nil
	}
	return strconv.FormatInt(i, 10), nil
}

// decimal scales n, which has scale from, to the column's scale, exactly.
// text is the value for errors; empty, n with its scale is shown.
func (c *conv) decimal(n decimal128.Num, from int32, text string) (any, error) {
	show := func() string {
		if text != "" {
			return text
		}
		return fmt.Sprintf("%se-%d", n.BigInt(), from)
	}
	if from < 0 || from > 38 {
		return nil, c.errorf("%s has scale %d, outside 0 to 38", show(), from)
	}
	if from < c.scale {
		// Checked before scaling up, which would wrap around past 38
		// digits.
		if !n.FitsInPrecision(max(c.precision-(c.scale-from), 0)) {
			return nil, c.errorf("%s does not fit decimal(%d,%d)", show(), c.precision, c.scale)
		}
		n = n.IncreaseScaleBy(c.scale - from)
	} else if from > c.scale {
		r, err := n.Rescale(from, c.scale)
		if err != nil {
			return nil, c.errorf("%s has more than %d fraction digits", show(), c.scale)
		}
		n = r
	}
	if !n.FitsInPrecision(c.precision) {
		return nil, c.errorf("%s does not fit decimal(%d,%d)", show(), c.precision, c.scale)
	}
	return n, nil
}

// bytes converts a string or bytes value; b aliases the payload.
func (c *conv) bytes(b []byte) (any, error) {
	switch c.out {
	case outString:
		if !utf8.Valid(b) {
			return nil, c.errorf("string is not valid UTF-8")
		}
		return unsafe.String(unsafe.SliceData(b), len(b)), nil
	case outBinary:
		return b, nil
	case outFixed:
		if len(b) != c.fixedLen {
			return nil, c.errorf("%d bytes do not fit fixed[%d]", len(b), c.fixedLen)
		}
		return b, nil
	case outUUID:
		if c.kind == protoreflect.BytesKind {
			u, err := uuid.FromBytes(b)
			if err != nil {
				return nil, c.errorf("%d bytes are not a UUID", len(b))
			}
			return u, nil
		}
		u, err := uuid.ParseBytes(b)
		if err != nil || len(b) != 36 {
			return nil, c.errorf("%q is not a UUID", shorten(b))
		}
		return u, nil
	case outDecimal:
		return c.decimalText(b)
	}
	panic("protodec: bytes for a column of neither string nor binary")
}

// decimalText parses a decimal number written in plain digits (an
// optional sign, digits, an optional point and fraction digits), exactly.
func (c *conv) decimalText(b []byte) (any, error) {
	s := b
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var n decimal128.Num
	digits, frac, point := 0, int32(0), false
	ten := decimal128.FromU64(10)
	for _, ch := range s {
		switch {
		case ch == '.' && !point:
			point = true
		case ch >= '0' && ch <= '9':
			if digits > 0 || ch != '0' {
				digits++
			}
			if digits > 38 {
				return nil, c.errorf("%q does not fit decimal(%d,%d)", shorten(b), c.precision, c.scale)
			}
			n = n.Mul(ten).Add(decimal128.FromU64(uint64(ch - '0')))
			if point {
				frac++
			}
		default:
			return nil, c.errorf("%q is not a decimal number", shorten(b))
		}
	}
	if len(s) == 0 || s[0] == '.' && len(s) == 1 || frac > 38 {
		return nil, c.errorf("%q is not a decimal number", shorten(b))
	}
	if neg {
		n = n.Negate()
	}
	return c.decimal(n, frac, string(shorten(b)))
}

func shorten(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// timestamp converts a google.protobuf.Timestamp's content.
func (c *conv) timestamp(b []byte) (any, error) {
	var secs, nanos int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, wireErr(n)
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, wireErr(n)
			}
			b = b[n:]
			if num == 1 {
				secs = int64(x)
			} else {
				nanos = int64(int32(x))
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, wireErr(n)
		}
		b = b[n:]
	}
	// The range of google.protobuf.Timestamp: years 1 to 9999.
	if nanos < 0 || nanos > 999_999_999 || secs < -62_135_596_800 || secs > 253_402_300_799 {
		return nil, c.errorf("timestamp %d s %d ns is outside years 1 to 9999", secs, nanos)
	}
	if c.out == outTimestampNs {
		if secs < -9_223_372_035 || secs > 9_223_372_035 {
			return nil, c.errorf("timestamp %d s does not fit nanoseconds since 1970", secs)
		}
		return arrow.Timestamp(secs*1e9 + nanos), nil
	}
	return arrow.Timestamp(secs*1e6 + nanos/1e3), nil
}

// date converts a google.type.Date's content; a date without a year,
// month or day (which the type allows) has no Iceberg date.
func (c *conv) date(b []byte) (any, error) {
	var ymd [4]int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, wireErr(n)
		}
		b = b[n:]
		if num >= 1 && num <= 3 && typ == protowire.VarintType {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, wireErr(n)
			}
			b = b[n:]
			ymd[num] = int64(int32(x))
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, wireErr(n)
		}
		b = b[n:]
	}
	y, m, d := ymd[1], ymd[2], ymd[3]
	t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
	if y < 1 || y > 9999 || t.Year() != int(y) || t.Month() != time.Month(m) || t.Day() != int(d) {
		return nil, c.errorf("date %04d-%02d-%02d is not a calendar date", y, m, d)
	}
	return arrow.Date32(t.Unix() / 86400), nil
}

// confluentDecimal converts a confluent.type.Decimal's content: the
// unscaled value (field 1, big-endian two's complement, at most 16 bytes)
// and its scale (field 3); its precision (field 2) is the writer's and
// the column's is what counts.
func (c *conv) confluentDecimal(b []byte) (any, error) {
	var value []byte
	var scale int32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, wireErr(n)
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, wireErr(n)
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			value, _ = protowire.ConsumeBytes(b[:n])
		case num == 3 && typ == protowire.VarintType:
			x, _ := protowire.ConsumeVarint(b[:n])
			scale = int32(x)
		}
		b = b[n:]
	}
	if len(value) > 16 {
		return nil, c.errorf("decimal of %d bytes does not fit 128 bits", len(value))
	}
	var buf [16]byte
	if len(value) > 0 && value[0]&0x80 != 0 {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(value):], value)
	n := decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:]))
	if scale < 0 || scale > 38 {
		return nil, c.errorf("decimal %s has scale %d, outside 0 to 38", n.BigInt(), scale)
	}
	return c.decimal(n, scale, "")
}
