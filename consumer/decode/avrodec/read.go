package avrodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Malformed bytes. The op that meets one adds the field and the position
// (state.fail).
var (
	errTruncated = errors.New("the value runs past the end of the payload")
	errVarint    = errors.New("varint longer than 10 bytes")
	errTooDeep   = errors.New("nests deeper than the limit")
)

// state is the reading of one payload. It lives on DecodeInto's stack,
// which keeps the Decoder free of per-record state.
type state struct {
	buf   []byte
	pos   int
	depth int
	max   int    // nesting limit of skipped recursive values
	a     *arena // from arenas, for the values of this payload's row
}

// long reads a zigzag varint, the encoding of int, long, enum indexes,
// union indexes, lengths and block counts. The one-byte case is inlined
// into the callers; it is most of the union indexes and small numbers.
func (s *state) long() (int64, error) {
	if s.pos < len(s.buf) {
		if b := s.buf[s.pos]; b < 0x80 {
			s.pos++
			return int64(b>>1) ^ -int64(b&1), nil
		}
	}
	return s.longSlow()
}

// longSlow is kept out of line so that long stays small enough to inline.
//
//go:noinline
func (s *state) longSlow() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if s.pos >= len(s.buf) {
			return 0, errTruncated
		}
		b := s.buf[s.pos]
		s.pos++
		if shift == 63 && b > 1 {
			return 0, errVarint
		}
		u |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errVarint
}

// length reads the varint of a length, with the two-byte case (lengths
// of 64 to 8191, most strings of a wide record) inline as well, before
// falling back to long.
func (s *state) length() (int64, error) {
	if p := s.pos; p+1 < len(s.buf) {
		b0, b1 := s.buf[p], s.buf[p+1]
		if b0 < 0x80 {
			s.pos = p + 1
			return int64(b0>>1) ^ -int64(b0&1), nil
		}
		if b1 < 0x80 {
			u := uint64(b0&0x7f) | uint64(b1)<<7
			s.pos = p + 2
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return s.long()
}

// branch reads a union index below n when it is one byte, as it is for
// unions of up to 64 branches; -1 leaves the reading to index. It is small
// enough to be inlined in the loop over a record's fields.
func (s *state) branch(n int) int {
	if s.pos < len(s.buf) {
		if c := int(s.buf[s.pos]); c&0x81 == 0 && c>>1 < n {
			s.pos++
			return c >> 1
		}
	}
	return -1
}

// int reads an Avro int: a long that fits in 32 bits.
func (s *state) int() (int32, error) {
	v, err := s.long()
	if err != nil {
		return 0, err
	}
	if v != int64(int32(v)) {
		return 0, fmt.Errorf("int %d does not fit in 32 bits", v)
	}
	return int32(v), nil
}

// index reads a union branch or enum symbol index below n.
func (s *state) index(n int, what string) (int, error) {
	v, err := s.long()
	if err != nil {
		return 0, err
	}
	if v < 0 || v >= int64(n) {
		return 0, indexError(what, v, n)
	}
	return int(v), nil
}

func indexError(what string, v int64, n int) error {
	return fmt.Errorf("%s index %d, not in [0, %d)", what, v, n)
}

// next returns the next n bytes, which alias the payload.
func (s *state) next(n int) ([]byte, error) {
	if n > len(s.buf)-s.pos {
		return nil, errTruncated
	}
	b := s.buf[s.pos : s.pos+n : s.pos+n]
	s.pos += n
	return b, nil
}

// bytes reads a length and that many bytes, which alias the payload.
func (s *state) bytes() ([]byte, error) {
	n, err := s.length()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(s.buf)-s.pos) {
		return nil, lengthError(n)
	}
	b := s.buf[s.pos : s.pos+int(n) : s.pos+int(n)]
	s.pos += int(n)
	return b, nil
}

func lengthError(n int64) error {
	if n < 0 {
		return fmt.Errorf("negative length %d", n)
	}
	return errTruncated
}

// str reads a string without copying it: the string aliases the payload.
func (s *state) str() (string, error) {
	b, err := s.bytes()
	if err != nil || len(b) == 0 {
		return "", err
	}
	return unsafe.String(&b[0], len(b)), nil
}

func (s *state) float32() (float32, error) {
	if len(s.buf)-s.pos < 4 {
		return 0, errTruncated
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(s.buf[s.pos:]))
	s.pos += 4
	return v, nil
}

func (s *state) float64() (float64, error) {
	if len(s.buf)-s.pos < 8 {
		return 0, errTruncated
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(s.buf[s.pos:]))
	s.pos += 8
	return v, nil
}

func (s *state) skipN(n int) error {
	if n > len(s.buf)-s.pos {
		return errTruncated
	}
	s.pos += n
	return nil
}

// blockCount reads the count of an array or map block. A negative count
// is followed by the block's size in bytes, which is returned (else -1).
func (s *state) blockCount() (count, size int64, err error) {
	count, err = s.long()
	if err != nil {
		return 0, 0, err
	}
	if count >= 0 {
		return count, -1, nil
	}
	if count == math.MinInt64 {
		return 0, 0, fmt.Errorf("block count %d", count)
	}
	size, err = s.long()
	if err != nil {
		return 0, 0, err
	}
	if size < 0 {
		return 0, 0, fmt.Errorf("negative block size %d", size)
	}
	return -count, size, nil
}

// checkCount refuses a block of more items than bytes left when each item
// takes at least one byte, so a forged count cannot make a loop or an
// allocation larger than the payload.
func (s *state) checkCount(count int64, zero bool) error {
	left := int64(len(s.buf) - s.pos)
	if zero {
		left = int64(len(s.buf)) // items of no bytes: bounded by the payload's size all the same
	}
	if count > left {
		return fmt.Errorf("block of %d items with %d bytes left", count, len(s.buf)-s.pos)
	}
	return nil
}

// skip reads past a value of n without making anything of it. Only
// recursive types can nest without bound, so the depth is counted here.
func (s *state) skip(n *node) error {
	switch n.kind {
	case kNull:
		return nil
	case kBoolean:
		return s.skipN(1)
	case kInt, kLong, kEnum:
		_, err := s.long()
		return err
	case kFloat:
		return s.skipN(4)
	case kDouble:
		return s.skipN(8)
	case kFixed:
		return s.skipN(n.size)
	case kBytes, kString:
		_, err := s.bytes()
		return err
	case kUnion:
		i, err := s.index(len(n.branches), "union branch")
		if err != nil {
			return err
		}
		return s.skip(n.branches[i])
	}
	// No defer: with this many returns it would not be open-coded, and
	// it cost a fifth of skipping.
	if s.depth >= s.max {
		return errTooDeep
	}
	s.depth++
	err := s.skipNested(n)
	s.depth--
	return err
}

// skipNested skips a record, an array or a map.
func (s *state) skipNested(n *node) error {
	switch n.kind {
	case kRecord:
		for _, f := range n.fields {
			if err := s.skip(f.typ); err != nil {
				return err
			}
		}
		return nil
	case kArray, kMap:
		for {
			count, size, err := s.blockCount()
			if err != nil {
				return err
			}
			if count == 0 {
				return nil
			}
			if size >= 0 {
				// The writer gave the block's size: jump over it.
				if err := s.skipN(int(min(size, math.MaxInt32))); err != nil {
					return err
				}
				continue
			}
			if n.kind == kArray && n.items.zero {
				continue
			}
			if err := s.checkCount(count, false); err != nil {
				return err
			}
			for range count {
				if n.kind == kMap {
					if _, err := s.bytes(); err != nil {
						return err
					}
					if err := s.skip(n.values); err != nil {
						return err
					}
				} else if err := s.skip(n.items); err != nil {
					return err
				}
			}
		}
	}
	return fmt.Errorf("cannot skip type %s", n)
}
