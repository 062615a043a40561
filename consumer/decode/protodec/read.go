package protodec

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/icewal/ingestor/consumer/decode"
)

// DecodeInto decodes one protobuf message (the payload after the message
// indexes) into a Row, written into dst when it has room, as
// decode.Decoder.DecodeInto does. It reads the wire format once, converts
// the fields the mapping names and skips the others without building
// them. The error is always a *decode.Error.
//
// Strings and binary values in the row alias msg: the caller must be done
// with the row, or copy them, before msg changes. The consumer's segments
// copy every value into their own buffers when they take the row.
//
// Wire semantics are protobuf's: the last occurrence of a singular scalar
// wins, occurrences of a singular message merge, repeated scalars may be
// packed or not, and a map's repeated key keeps its last entry. An absent
// field without presence (a proto3 scalar) is its zero value, an absent
// message or `optional` field is null, and so is every column under an
// absent message. A proto2 field's declared default is not applied: the
// field has presence, so absent is null. The members of a oneof are read
// as the fields they are; a message carrying two of them (which no
// serializer writes) gives both. A field whose wire type is not its
// kind's is a ReasonNotProtobuf drop, where protobuf's own parser would
// keep it as an unknown field: the record was not written with this
// schema, and its value would silently be lost.
func (d *Decoder) DecodeInto(dst decode.Row, msg []byte) (decode.Row, error) {
	if d.maxBytes > 0 && len(msg) > d.maxBytes {
		return nil, &decode.Error{Reason: decode.ReasonTooLarge, Err: fmt.Errorf("%d bytes, over the limit of %d", len(msg), d.maxBytes)}
	}
	var row decode.Row
	if cap(dst) >= len(d.names) {
		row = dst[:len(d.names)]
		clear(row)
	} else {
		row = make(decode.Row, len(d.names))
	}
	r := reader{maxDepth: d.maxDepth, slab: slab{nWords: d.words, nStrs: d.strs}}
	if err := r.visit(d.root, msg, row, 1); err != nil {
		return nil, classify(err)
	}
	for _, i := range d.required {
		if row[i] == nil {
			return nil, &decode.Error{Reason: decode.ReasonMissingRequired, Column: d.names[i], Err: errors.New("required value is missing or null")}
		}
	}
	return row, nil
}

func classify(err error) *decode.Error {
	var ce *convertError
	if errors.As(err, &ce) {
		return &decode.Error{Reason: decode.ReasonConvert, Column: ce.col, Err: err}
	}
	if errors.Is(err, errTooDeep) {
		return &decode.Error{Reason: decode.ReasonTooDeep, Err: err}
	}
	return &decode.Error{Reason: decode.ReasonNotProtobuf, Err: err}
}

var errTooDeep = errors.New("messages nest deeper than the limit")

type reader struct {
	maxDepth int
	slab     slab
}

// visit reads the fields of one message into slots by plan p.
func (r *reader) visit(p *plan, b []byte, slots []any, depth int) error {
	if r.maxDepth > 0 && depth > r.maxDepth {
		return errTooDeep
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return wireErr(n)
		}
		b = b[n:]
		var t *target
		if int(num) < len(p.dense) {
			t = p.dense[num]
		} else if p.sparse != nil {
			t = p.sparse[num]
		}
		if t != nil && t.fast != nil {
			// The common case: one singular scalar column, read where it
			// is without measuring the value first.
			if typ != t.fast.wire {
				return t.fast.wireTypeError(num, typ)
			}
			x, n, err := r.scalar(t.fast, typ, b)
			if err != nil {
				return err
			}
			slots[t.fastSlot] = x
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return wireErr(n)
		}
		v := b[:n]
		b = b[n:]
		if t == nil {
			continue
		}
		for _, sc := range t.convs {
			if err := r.set(sc.c, num, typ, v, &slots[sc.slot], depth); err != nil {
				return err
			}
		}
		if t.child != nil {
			content, err := messageContent(num, typ, v)
			if err != nil {
				return err
			}
			if err := r.visit(t.child, content, slots, depth+1); err != nil {
				return err
			}
		}
	}
	for _, z := range p.implicit {
		if slots[z.slot] == nil {
			slots[z.slot] = z.zero
		}
	}
	for _, i := range p.maps {
		if mv, ok := slots[i].(decode.MapValue); ok && len(mv.Keys) > 1 {
			slots[i] = lastEntries(mv)
		}
	}
	return nil
}

// messageContent returns the fields of a message value v (length
// delimited, or a proto2 group up to its end tag).
func messageContent(num protowire.Number, typ protowire.Type, v []byte) ([]byte, error) {
	switch typ {
	case protowire.BytesType:
		b, n := protowire.ConsumeBytes(v)
		if n < 0 {
			return nil, wireErr(n)
		}
		return b, nil
	case protowire.StartGroupType:
		b, n := protowire.ConsumeGroup(num, v)
		if n < 0 {
			return nil, wireErr(n)
		}
		return b, nil
	}
	return nil, &wireError{fmt.Errorf("field %d has wire type %d, not a message", num, typ)}
}

// set stores the value v of field num (with its wire type typ) in *slot:
// the value of a singular field, one more element of a list, one more
// entry of a map.
func (r *reader) set(c *conv, num protowire.Number, typ protowire.Type, v []byte, slot *any, depth int) error {
	switch {
	case c.isList:
		list, _ := (*slot).([]any)
		if typ == protowire.BytesType && c.elem.wire != protowire.BytesType {
			// Packed scalars.
			b, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return wireErr(n)
			}
			for len(b) > 0 {
				x, n, err := r.scalar(c.elem, c.elem.wire, b)
				if err != nil {
					return err
				}
				list = append(list, x)
				b = b[n:]
			}
		} else {
			x, err := r.value(c.elem, num, typ, v, nil, depth)
			if err != nil {
				return err
			}
			list = append(list, x)
		}
		*slot = list
		return nil
	case c.isMap:
		mv, _ := (*slot).(decode.MapValue)
		k, x, err := r.entry(c, num, typ, v, depth)
		if err != nil {
			return err
		}
		mv.Keys = append(mv.Keys, k)
		mv.Values = append(mv.Values, x)
		*slot = mv
		return nil
	}
	x, err := r.value(c, num, typ, v, *slot, depth)
	if err != nil {
		return err
	}
	*slot = x
	return nil
}

// value converts one value v of c's field; old is the value a previous
// occurrence left, which a message merges into.
func (r *reader) value(c *conv, num protowire.Number, typ protowire.Type, v []byte, old any, depth int) (any, error) {
	if typ != c.wire {
		return nil, c.wireTypeError(num, typ)
	}
	if c.shape == shapeScalar {
		x, _, err := r.scalar(c, typ, v)
		return x, err
	}
	b, err := messageContent(num, typ, v)
	if err != nil {
		return nil, err
	}
	switch c.shape {
	case shapeTimestamp:
		return c.timestamp(b)
	case shapeDate:
		return c.date(b)
	case shapeDecimal:
		return c.confluentDecimal(b)
	case shapeWrapper:
		return r.wrapper(c, b, depth)
	}
	s, _ := old.([]any)
	if s == nil {
		s = make([]any, c.st.width)
	}
	if err := r.visit(c.st, b, s, depth+1); err != nil {
		return nil, err
	}
	for _, f := range c.st.required {
		if s[f.slot] == nil {
			return nil, c.errorf("required field %s is missing", f.name)
		}
	}
	return s, nil
}

// scalar reads one scalar of c's kind, with wire type typ, at the start
// of b, and returns its value and length.
func (r *reader) scalar(c *conv, typ protowire.Type, b []byte) (any, int, error) {
	var x uint64
	var n int
	switch typ {
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(b)
		if n > 0 {
			if v, ok := r.slab.boxed(c, x, nil); ok {
				return v, n, nil
			}
		}
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		x = uint64(v)
	case protowire.Fixed64Type:
		x, n = protowire.ConsumeFixed64(b)
		if n > 0 {
			if v, ok := r.slab.boxed(c, x, nil); ok {
				return v, n, nil
			}
		}
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, 0, wireErr(n)
		}
		if s, ok := r.slab.boxed(c, 0, v); ok {
			return s, n, nil
		}
		s, err := c.bytes(v)
		return s, n, err
	default:
		return nil, 0, &wireError{fmt.Errorf("%s: wire type %d is not a scalar's", c.path, typ)}
	}
	if n < 0 {
		return nil, 0, wireErr(n)
	}
	s, err := c.bits(x)
	return s, n, err
}

// wrapper reads a google.protobuf wrapper message: its field 1, or the
// zero value when the message is empty.
func (r *reader) wrapper(c *conv, b []byte, depth int) (any, error) {
	x := c.inner.zero
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
		if num == 1 {
			v, err := r.value(c.inner, num, typ, b[:n], nil, depth)
			if err != nil {
				return nil, err
			}
			x = v
		}
		b = b[n:]
	}
	if x == nil {
		return nil, c.errorf("empty wrapper has no value of the column's type")
	}
	return x, nil
}

// entry reads one map entry message: key (field 1) and value (field 2),
// each its zero value when absent (an empty message for a message value).
func (r *reader) entry(c *conv, num protowire.Number, typ protowire.Type, v []byte, depth int) (k, x any, err error) {
	b, err := messageContent(num, typ, v)
	if err != nil {
		return nil, nil, err
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, wireErr(n)
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, nil, wireErr(n)
		}
		switch num {
		case 1:
			k, err = r.value(c.key, num, typ, b[:n], nil, depth)
		case 2:
			x, err = r.value(c.val, num, typ, b[:n], x, depth)
		}
		if err != nil {
			return nil, nil, err
		}
		b = b[n:]
	}
	if k == nil {
		if k = c.key.zero; k == nil {
			return nil, nil, c.errorf("map entry without a key")
		}
	}
	if x == nil {
		if c.val.shape == shapeMessage {
			x, err = r.value(c.val, 2, protowire.BytesType, []byte{0}, nil, depth)
			if err != nil {
				return nil, nil, err
			}
		} else {
			x = c.val.zero
		}
	}
	return k, x, nil
}

// lastEntries removes the entries whose key a later entry repeats.
func lastEntries(mv decode.MapValue) decode.MapValue {
	n := len(mv.Keys)
	last := make(map[any]int, n)
	for i, k := range mv.Keys {
		last[k] = i
	}
	if len(last) == n {
		return mv
	}
	out := decode.MapValue{Keys: make([]any, 0, len(last)), Values: make([]any, 0, len(last))}
	for i, k := range mv.Keys {
		if last[k] == i {
			out.Keys = append(out.Keys, k)
			out.Values = append(out.Values, mv.Values[i])
		}
	}
	return out
}

func (c *conv) wireTypeError(num protowire.Number, typ protowire.Type) error {
	return &wireError{fmt.Errorf("field %d (%s) has wire type %d, where its kind %s has %d", num, c.path, typ, c.kind, c.wire)}
}
