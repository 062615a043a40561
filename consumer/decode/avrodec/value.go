package avrodec

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/consumer/decode"
)

// decimalValue makes the decimal128.Num of an Avro decimal, the unscaled
// value as big-endian two's complement, rescaled to the column's scale
// exactly: a non-zero digit beyond the column's scale, or more digits
// than its precision, is a convert error, as for JSON.
func (a *arena) decimalValue(o *op, b []byte) (any, error) {
	n, ok := twosComplement(b)
	if !ok {
		return nil, convertError(o, "decimal of %d bytes does not fit in 128 bits", len(b))
	}
	if o.wscale != o.scale {
		if o.scale > o.wscale && !n.FitsInPrecision(38-(o.scale-o.wscale)) {
			return nil, convertError(o, "decimal %s has more than the column's %d digits", n.ToString(o.wscale), o.prec)
		}
		r, err := n.Rescale(o.wscale, o.scale)
		if err != nil {
			return nil, convertError(o, "decimal %s has digits beyond the column's scale %d", n.ToString(o.wscale), o.scale)
		}
		n = r
	}
	if !n.FitsInPrecision(o.prec) {
		return nil, convertError(o, "decimal %s has more than the column's %d digits", n.ToString(o.scale), o.prec)
	}
	return a.decimal(n), nil
}

// twosComplement reads a big-endian two's complement integer of any
// length that fits in 128 bits.
func twosComplement(b []byte) (decimal128.Num, bool) {
	var ext byte
	if len(b) > 0 && b[0]&0x80 != 0 {
		ext = 0xff
	}
	for len(b) > 16 {
		if b[0] != ext {
			return decimal128.Num{}, false
		}
		b = b[1:]
	}
	if len(b) == 16 && (b[0]&0x80 != 0) != (ext == 0xff) {
		return decimal128.Num{}, false
	}
	var w [16]byte
	for i := range 16 - len(b) {
		w[i] = ext
	}
	copy(w[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(w[:8])), binary.BigEndian.Uint64(w[8:])), true
}

// uuidValue parses the canonical 36-character text of a UUID, the only
// form the JSON decoder accepts too.
func uuidValue(o *op, v string) (any, error) {
	if len(v) != 36 {
		return nil, convertError(o, "%q is not a UUID (8-4-4-4-12 hex digits)", shorten(v))
	}
	u, err := uuid.Parse(v)
	if err != nil {
		return nil, convertError(o, "%q is not a UUID (8-4-4-4-12 hex digits)", v)
	}
	return u, nil
}

func shorten(v string) string {
	if len(v) > 64 {
		return v[:64] + "..."
	}
	return v
}

// structValue reads a record into a struct's fields.
func (s *state) structValue(o *op) (any, error) {
	fields := make([]any, o.n)
	if err := s.run(o.sub, fields); err != nil {
		return nil, err
	}
	for _, i := range o.required {
		if fields[i] == nil {
			return nil, &decode.Error{Reason: decode.ReasonConvert, Column: o.column, Err: fmt.Errorf("%s.%s: %w", o.path, o.fieldNames[i], errMissing)}
		}
	}
	return fields, nil
}

// listValue reads an array's blocks into a list.
func (s *state) listValue(o *op) (any, error) {
	var items []any
	for {
		count, _, err := s.blockCount()
		if err != nil {
			return nil, err
		}
		if count == 0 {
			if items == nil {
				items = []any{}
			}
			return items, nil
		}
		if err := s.checkCount(count, o.elemZero); err != nil {
			return nil, err
		}
		if items == nil {
			items = make([]any, 0, count)
		}
		for range count {
			v, err := s.value(o.elem)
			if err != nil {
				return nil, err
			}
			if v == nil && o.elemRequired {
				return nil, &decode.Error{Reason: decode.ReasonConvert, Column: o.column, Err: fmt.Errorf("%s[%d]: %w", o.path, len(items), errMissing)}
			}
			items = append(items, v)
		}
	}
}

// mapValue reads a map's blocks into a MapValue, its entries in the order
// of the payload.
func (s *state) mapValue(o *op) (any, error) {
	m := decode.MapValue{Keys: []any{}, Values: []any{}}
	for {
		count, _, err := s.blockCount()
		if err != nil {
			return nil, err
		}
		if count == 0 {
			return m, nil
		}
		if err := s.checkCount(count, false); err != nil {
			return nil, err
		}
		for range count {
			k, err := s.str()
			if err != nil {
				return nil, err
			}
			v, err := s.value(o.elem)
			if err != nil {
				return nil, err
			}
			if v == nil && o.elemRequired {
				return nil, &decode.Error{Reason: decode.ReasonConvert, Column: o.column, Err: fmt.Errorf("%s[%q]: %w", o.path, k, errMissing)}
			}
			m.Keys = append(m.Keys, k)
			m.Values = append(m.Values, v)
		}
	}
}
