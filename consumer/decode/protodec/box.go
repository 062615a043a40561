package protodec

import (
	"sync"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Putting a long, a double or a string in an interface allocates (but
// for small integers), and a wide row holds dozens of them: one
// allocation each was the largest cost of decoding. The reader puts the
// numbers and string headers in chunks of cells instead (slab), and makes
// the row's interfaces point into them. The interface layout (a type
// pointer and a data pointer) is the runtime's, which reflect relies on
// too; a chunk stays alive as long as any value in it does. The JSON
// decoder (consumer/decode/box.go) boxes its values the same way.

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

// slab hands out the cells of the boxed values, from chunks of chunk
// cells. A cell is never written again once handed out: a chunk is
// dropped, not reused, when its last cell is taken. A slab goes back to
// slabPool after each row with what is left of its chunks, so a row costs
// a fraction of a chunk rather than an allocation per value, and a chunk
// kept alive by one value keeps little.
type slab struct {
	words []uint64
	strs  []string
}

const chunk = 32

var slabPool = sync.Pool{New: func() any { return new(slab) }}

func (s *slab) word(v uint64) unsafe.Pointer {
	if len(s.words) == 0 {
		s.words = make([]uint64, chunk)
	}
	p := &s.words[0]
	*p = v
	s.words = s.words[1:]
	return unsafe.Pointer(p)
}

func (s *slab) int64(v int64) any { return box(int64Type, s.word(uint64(v))) }

func (s *slab) float64(bits uint64) any { return box(float64Type, s.word(bits)) }

func (s *slab) string(v string) any {
	if len(s.strs) == 0 {
		s.strs = make([]string, chunk)
	}
	p := &s.strs[0]
	*p = v
	s.strs = s.strs[1:]
	return box(stringType, unsafe.Pointer(p))
}

// boxed reads the values the slab holds without a conversion: a long
// column of an int64 field, a double column of a double field, a string
// column of a string field (valid UTF-8). It returns false for others.
func (s *slab) boxed(c *conv, x uint64, b []byte) (any, bool) {
	switch {
	case c.out == outInt64 && c.kind == protoreflect.Int64Kind:
		return s.int64(int64(x)), true
	case c.out == outFloat64 && c.kind == protoreflect.DoubleKind:
		return s.float64(x), true
	case c.out == outString && c.kind == protoreflect.StringKind && utf8.Valid(b):
		return s.string(unsafe.String(unsafe.SliceData(b), len(b))), true
	}
	return nil, false
}
