package protodec

import (
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Putting a long, a double or a string in an interface allocates (but
// for small integers), and a wide row holds dozens of them: one
// allocation each was the largest cost of decoding. The reader puts a
// row's numbers and string headers in two arrays instead, allocated once
// per row in chunks as the values come, and makes
// the row's interfaces point into them. The interface layout (a type
// pointer and a data pointer) is the runtime's; the arrays stay alive as
// long as any value of the row does, and an element is never written
// twice, so each value stays what it was when decoded.

// eface is the layout of an interface value.
type eface struct {
	typ, data unsafe.Pointer
}

var (
	int64Type   = typeOf(int64(0))
	float64Type = typeOf(float64(0))
	stringType  = typeOf("")
)

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

func box(typ, data unsafe.Pointer) any {
	var v any
	*(*eface)(unsafe.Pointer(&v)) = eface{typ, data}
	return v
}

// slab holds the boxed values of one row, in chunks of up to chunk
// elements: a sparse row of many columns fills few.
type slab struct {
	words []uint64
	strs  []string
	// nWords and nStrs are the chunk sizes, 0 when the plan reads no
	// such column directly.
	nWords, nStrs int
}

const chunk = 16

func (s *slab) word(v uint64) unsafe.Pointer {
	if len(s.words) == cap(s.words) {
		s.words = make([]uint64, 0, s.nWords)
	}
	s.words = append(s.words, v)
	return unsafe.Pointer(&s.words[len(s.words)-1])
}

func (s *slab) int64(v int64) any { return box(int64Type, s.word(uint64(v))) }

func (s *slab) float64(bits uint64) any { return box(float64Type, s.word(bits)) }

func (s *slab) string(v string) any {
	if len(s.strs) == cap(s.strs) {
		s.strs = make([]string, 0, s.nStrs)
	}
	s.strs = append(s.strs, v)
	return box(stringType, unsafe.Pointer(&s.strs[len(s.strs)-1]))
}

// boxed reads the values the slab holds without a conversion: a long
// column of an int64 field, a double column of a double field, a string
// column of a string field (valid UTF-8). It returns false for others.
func (s *slab) boxed(c *conv, x uint64, b []byte) (any, bool) {
	switch {
	case c.out == outInt64 && c.kind == protoreflect.Int64Kind && s.nWords > 0:
		return s.int64(int64(x)), true
	case c.out == outFloat64 && c.kind == protoreflect.DoubleKind && s.nWords > 0:
		return s.float64(x), true
	case c.out == outString && c.kind == protoreflect.StringKind && s.nStrs > 0 && utf8.Valid(b):
		return s.string(unsafe.String(unsafe.SliceData(b), len(b))), true
	}
	return nil, false
}

// slabSizes gives the chunk sizes of a plan's slabs: the number of
// columns it reads directly into a long or double (words) and a string
// (strs), through the messages it passes, up to chunk.
func slabSizes(p *plan) (words, strs int) {
	words, strs = columnCounts(p)
	return min(words, chunk), min(strs, chunk)
}

func columnCounts(p *plan) (words, strs int) {
	count := func(t *target) {
		if t == nil {
			return
		}
		if c := t.fast; c != nil {
			switch c.out {
			case outInt64, outFloat64:
				words++
			case outString:
				strs++
			}
		}
		if t.child != nil {
			w, s := columnCounts(t.child)
			words, strs = words+w, strs+s
		}
	}
	for _, t := range p.dense {
		count(t)
	}
	for _, t := range p.sparse {
		count(t)
	}
	return words, strs
}
