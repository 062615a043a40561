package avrodec

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/consumer/decode"
)

// defaultMaxDepth bounds the nesting of skipped recursive values when
// Limit sets none, as the JSON decoder keeps encoding/json's limit.
const defaultMaxDepth = 10000

// Limit sets the largest payload in bytes (larger ones are dropped with
// ReasonTooLarge) and the deepest nesting of a recursive type's value
// (deeper ones are dropped with ReasonTooDeep); zero leaves a limit at
// its default (none, and 10000 levels). Call it before the first
// DecodeInto.
func (d *Decoder) Limit(maxBytes, maxDepth int) {
	d.maxBytes, d.maxDepth = maxBytes, maxDepth
}

// Limits returns the limits Limit set, so that a decoder built for another
// writer schema keeps them.
func (d *Decoder) Limits() (maxBytes, maxDepth int) { return d.maxBytes, d.maxDepth }

// DecodeInto decodes one Avro binary value of the writer schema (no
// Confluent header: the caller strips it) into a Row, written into dst
// when it has room, as decode.Decoder.DecodeInto does. Fields that no
// column needs are read past without being built.
//
// Strings and binary values in the row alias payload: the caller must be
// done with the row before it reuses payload. The consumer is: its segment
// copies every value (rowBuffer.append encodes them into its own chunks,
// RowBuilder.Append into Arrow builders) before the next record is
// decoded. Structs, lists and maps are new slices in every row, so the
// Decoder holds no state between records and is safe for concurrent use.
//
// The error is always a *decode.Error: ReasonNotAvro when the bytes are
// not a value of the writer schema (truncated, a bad varint, a union or
// enum index out of range, bytes left over), ReasonConvert when a value
// does not fit its column, ReasonMissingRequired, ReasonTooLarge and
// ReasonTooDeep.
func (d *Decoder) DecodeInto(dst decode.Row, payload []byte) (decode.Row, error) {
	if d.maxBytes > 0 && len(payload) > d.maxBytes {
		return nil, &decode.Error{Reason: decode.ReasonTooLarge, Err: fmt.Errorf("%d bytes, over the limit of %d", len(payload), d.maxBytes)}
	}
	s := state{buf: payload, max: d.maxDepth}
	if s.max <= 0 {
		s.max = defaultMaxDepth
	}
	var row decode.Row
	if cap(dst) >= len(d.cols) {
		row = dst[:len(d.cols)]
		clear(row)
	} else {
		row = make(decode.Row, len(d.cols))
	}
	s.a = arenas.Get().(*arena)
	err := s.run(d.prog, row)
	arenas.Put(s.a)
	if err != nil {
		return nil, err
	}
	if s.pos != len(payload) {
		return nil, &decode.Error{Reason: decode.ReasonNotAvro, Err: fmt.Errorf("%d bytes left after the record's %d", len(payload)-s.pos, s.pos)}
	}
	for _, i := range d.required {
		if row[i] == nil {
			return nil, &decode.Error{Reason: decode.ReasonMissingRequired, Column: d.cols[i].name, Err: errMissing}
		}
	}
	return row, nil
}

var errMissing = errors.New("required value is missing or null")

// run runs a program over the fields of a record, storing the values it
// makes into dst.
func (s *state) run(prog []op, dst []any) error {
	for i := range prog {
		o := &prog[i]
		var err error
		switch o.code {
		case opSkipVarint:
			_, err = s.long()
		case opSkipFixed:
			err = s.skipN(o.n)
		case opSkipBytes:
			_, err = s.bytes()
		case opSkipNode:
			err = s.skip(o.node)
		case opSkipOpt:
			b := s.branch(2)
			if b < 0 {
				if b, err = s.index(2, "union branch"); err != nil {
					break
				}
			}
			if b == int(o.nul) {
				break
			}
			switch o.inner {
			case opSkipFixed:
				err = s.skipN(o.n)
			case opSkipVarint:
				_, err = s.long()
			default:
				_, err = s.bytes()
			}
		case opInline:
			err = s.run(o.sub, dst)
		case opFanout:
			start := s.pos
			for j := range o.sub {
				s.pos = start
				if dst[o.sub[j].col], err = s.value(&o.sub[j]); err != nil {
					return s.fail(&o.sub[j], err)
				}
			}
		case opBranch:
			b := s.branch(len(o.alts))
			if b < 0 {
				if b, err = s.index(len(o.alts), "union branch"); err != nil {
					break
				}
			}
			// The branches of a skipped nullable field, inline.
			switch alt := &o.alts[b]; alt.code {
			case opSkipFixed:
				err = s.skipN(alt.n)
			case opSkipVarint:
				_, err = s.long()
			case opSkipBytes:
				_, err = s.bytes()
			default:
				err = s.run(o.alts[b:b+1], dst)
			}
		case opUnion:
			// A nullable column, inline.
			b := s.branch(len(o.alts))
			if b < 0 {
				if b, err = s.index(len(o.alts), "union branch"); err != nil {
					break
				}
			}
			if b == int(o.nul) {
				break
			}
			// The commonest values without a call to value, and without
			// reading alts: inner is the value's code in a nullable
			// field's union of two branches.
			switch o.inner {
			case opString:
				var v string
				v, err = s.str()
				dst[o.col] = s.a.str(v)
			case opLongLong:
				var v int64
				v, err = s.long()
				dst[o.col] = s.a.int64(v)
			case opDoubleDouble:
				var v float64
				v, err = s.float64()
				dst[o.col] = s.a.float64(v)
			case opBool:
				if s.pos < len(s.buf) && s.buf[s.pos] <= 1 {
					dst[o.col] = s.buf[s.pos] == 1 // Go boxes a bool without allocating
					s.pos++
					break
				}
				dst[o.col], err = s.value(&o.alts[b])
			default:
				dst[o.col], err = s.value(&o.alts[b])
			}
		default:
			dst[o.col], err = s.value(o)
		}
		if err != nil {
			return s.fail(o, err)
		}
	}
	return nil
}

// fail turns a malformed-bytes error into a *decode.Error naming the field
// and the position; a *decode.Error passes as it is.
func (s *state) fail(o *op, err error) error {
	var de *decode.Error
	if errors.As(err, &de) {
		return err
	}
	var column string
	if o.info != nil {
		column = o.column
	}
	if errors.Is(err, errTooDeep) {
		return &decode.Error{Reason: decode.ReasonTooDeep, Column: column, Err: fmt.Errorf("value %s at byte %d: %w", o.where(), s.pos, err)}
	}
	return &decode.Error{Reason: decode.ReasonNotAvro, Column: column, Err: fmt.Errorf("value %s at byte %d: %w", o.where(), s.pos, err)}
}

// where names the op's value in errors.
func (o *op) where() string {
	if o.info == nil || o.path == "" {
		return "of a skipped field"
	}
	return "of " + o.path
}

// convertError is a value that does not fit its column.
func convertError(o *op, format string, args ...any) error {
	return &decode.Error{Reason: decode.ReasonConvert, Column: o.column, Err: fmt.Errorf("%s: "+format, append([]any{o.path}, args...)...)}
}

// value reads the value of a value op and makes its Row value.
func (s *state) value(o *op) (any, error) {
	switch o.code {
	case opUnion:
		b, err := s.index(len(o.alts), "union branch")
		if err != nil {
			return nil, err
		}
		alt := &o.alts[b]
		if alt.code == opNull {
			return nil, nil
		}
		return s.value(alt)
	case opNull:
		return nil, nil
	case opString:
		v, err := s.str()
		return s.a.str(v), err
	case opLongLong:
		v, err := s.long()
		return s.a.int64(v), err
	case opIntLong:
		v, err := s.int()
		return s.a.int64(int64(v)), err
	case opIntInt:
		v, err := s.int()
		return s.a.int32(v), err
	case opDoubleDouble:
		v, err := s.float64()
		return s.a.float64(v), err
	case opBool:
		if s.pos >= len(s.buf) {
			return nil, errTruncated
		}
		b := s.buf[s.pos]
		s.pos++
		if b > 1 {
			return nil, fmt.Errorf("boolean byte %d, not 0 or 1", b)
		}
		return b == 1, nil
	case opTimestamp:
		v, err := s.long()
		if err != nil {
			return nil, err
		}
		ts, err := timestamp(o, v)
		return s.a.timestamp(ts), err
	case opLongInt:
		v, err := s.long()
		if err != nil {
			return nil, err
		}
		if v != int64(int32(v)) {
			return nil, convertError(o, "long %d is out of the range of int", v)
		}
		return s.a.int32(int32(v)), nil
	case opIntFloat:
		v, err := s.int()
		return float32(v), err
	case opLongFloat:
		v, err := s.long()
		return float32(v), err
	case opFloatFloat:
		return s.float32()
	case opIntDouble:
		v, err := s.int()
		return float64(v), err
	case opLongDouble:
		v, err := s.long()
		return s.a.float64(float64(v)), err
	case opFloatDouble:
		v, err := s.float32()
		return s.a.float64(float64(v)), err
	case opEnum:
		i, err := s.index(len(o.symbols), "enum symbol")
		if err != nil {
			return nil, err
		}
		return o.symbols[i], nil
	case opBytes:
		v, err := s.bytes()
		return s.a.bytes(v), err
	case opFixed:
		v, err := s.next(o.n)
		return s.a.bytes(v), err
	case opBytesFixed:
		b, err := s.bytes()
		if err != nil {
			return nil, err
		}
		if len(b) != o.n {
			return nil, convertError(o, "%d bytes, the column is fixed[%d]", len(b), o.n)
		}
		return b, nil
	case opDate:
		v, err := s.int()
		return arrow.Date32(v), err
	case opTimeMillis:
		v, err := s.int()
		if err != nil {
			return nil, err
		}
		return timeOfDay(o, int64(v)*1000)
	case opTimeMicros:
		v, err := s.long()
		if err != nil {
			return nil, err
		}
		return timeOfDay(o, v)
	case opDecBytes:
		b, err := s.bytes()
		if err != nil {
			return nil, err
		}
		return s.a.decimalValue(o, b)
	case opDecFixed:
		b, err := s.next(o.n)
		if err != nil {
			return nil, err
		}
		return s.a.decimalValue(o, b)
	case opUUIDString:
		v, err := s.str()
		if err != nil {
			return nil, err
		}
		return uuidValue(o, v)
	case opUUIDFixed:
		b, err := s.next(16)
		if err != nil {
			return nil, err
		}
		return uuid.UUID(b), nil
	case opStruct:
		return s.structValue(o)
	case opList:
		return s.listValue(o)
	case opMap:
		return s.mapValue(o)
	}
	panic(fmt.Sprintf("avrodec: op %d makes no value", o.code))
}

// timestamp scales a timestamp of the writer's unit to the column's:
// microseconds, or nanoseconds for the _ns types. Digits below the
// column's unit are cut (rounding towards the past).
func timestamp(o *op, v int64) (int64, error) {
	if o.mul > 1 {
		if v > math.MaxInt64/o.mul || v < math.MinInt64/o.mul {
			return 0, convertError(o, "timestamp %d is out of the column's range", v)
		}
		return v * o.mul, nil
	}
	if o.div > 1 {
		q := v / o.div
		if v%o.div < 0 {
			q--
		}
		return q, nil
	}
	return v, nil
}

const microsPerDay = 86_400_000_000

func timeOfDay(o *op, us int64) (any, error) {
	if us < 0 || us >= microsPerDay {
		return nil, convertError(o, "time of day %d µs is not within a day", us)
	}
	return arrow.Time64(us), nil
}
