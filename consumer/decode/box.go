package decode

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// Boxing a converted scalar into the Row's any is an allocation per value
// when Go does it (runtime.convTstring, convT64: 16 and 8 bytes), and on
// wide events those allocations, one for most of the 35 values of a row,
// were the largest cost of the visit after the parsing itself. cells
// hands out the boxes from chunks instead: a value is written once into a
// free cell of a chunk and the interface points at that cell, so a row
// costs an allocation per chunk rather than per value.
//
// A cell is never written again once handed out (a chunk is dropped, not
// reused, when its last cell is taken), so an interface made here is as
// immutable as one Go makes: a row, or a value copied out of it, stays
// right however many rows are decoded after it. A chunk lives as long as
// any value boxed in it; a pooled cells keeps its current chunk, and the
// payloads its strings point into, until the chunk is used up.
type cells struct {
	strs  []string // the free cells of the current string chunk
	bins  [][]byte // the free cells of the current chunk of binary values
	words []uint64 // the free cells of the current chunk of 4- and 8-byte values
}

// cellChunk is the number of cells a chunk holds: a few rows' worth of
// values, small enough that a chunk kept alive by one value keeps little.
const cellChunk = 32

var cellPool = sync.Pool{New: func() any { return new(cells) }}

// eface is the layout of an empty interface in the Go runtime (the type
// word, then the pointer to the value), which reflect relies on too.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// typeWord returns the type word of the dynamic type of v.
func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// The type words of the types cells boxes; typeWord of a zero value
// allocates nothing.
var (
	typeString    = typeWord("")
	typeBytes     = typeWord([]byte(nil))
	typeInt32     = typeWord(int32(0))
	typeInt64     = typeWord(int64(0))
	typeFloat32   = typeWord(float32(0))
	typeFloat64   = typeWord(float64(0))
	typeDate32    = typeWord(arrow.Date32(0))
	typeTime64    = typeWord(arrow.Time64(0))
	typeTimestamp = typeWord(arrow.Timestamp(0))
)

// makeAny returns the interface of dynamic type typ whose value is at p.
func makeAny(typ, p unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// str boxes s; a nil c boxes it as Go does.
func (c *cells) str(s string) any {
	if c == nil {
		return s
	}
	if len(c.strs) == 0 {
		c.strs = make([]string, cellChunk)
	}
	p := &c.strs[0]
	*p = s
	c.strs = c.strs[1:]
	return makeAny(typeString, unsafe.Pointer(p))
}

// bytes boxes b; a nil c boxes it as Go does.
func (c *cells) bytes(b []byte) any {
	if c == nil {
		return b
	}
	if len(c.bins) == 0 {
		c.bins = make([][]byte, cellChunk)
	}
	p := &c.bins[0]
	*p = b
	c.bins = c.bins[1:]
	return makeAny(typeBytes, unsafe.Pointer(p))
}

// word returns a free cell of 8 bytes.
func (c *cells) word() unsafe.Pointer {
	if len(c.words) == 0 {
		c.words = make([]uint64, cellChunk)
	}
	p := &c.words[0]
	c.words = c.words[1:]
	return unsafe.Pointer(p)
}

// boxWord boxes v, of a type of at most 8 bytes without pointers whose
// type word is typ; a nil c boxes it as Go does. Values below 256 are
// boxed by Go, which keeps them in a static table without allocating.
func boxWord[T int32 | int64 | float32 | float64 | arrow.Date32 | arrow.Time64 | arrow.Timestamp](c *cells, typ unsafe.Pointer, v T) any {
	if c == nil {
		return v
	}
	p := c.word()
	*(*T)(p) = v
	return makeAny(typ, p)
}

// interned tells whether Go boxes n without allocating (its table of the
// integers 0 to 255).
func interned(n int64) bool { return uint64(n) < 256 }
