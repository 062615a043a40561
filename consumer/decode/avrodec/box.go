package avrodec

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Putting a string, a []byte or a number above 255 into an interface
// allocates room for it, one allocation per value: 36 in a wide row,
// which with the collector's work on them cost as much as reading the
// row. An arena instead allocates room for many values at a time, and
// each value is boxed pointing into its slot, as the compiler points
// into the room it allocates. A slot is written once, before its value is
// boxed, and never again: a chunk is dropped, not reused, once its last
// slot is taken. So the rows stay valid however long they are kept.
//
// Arenas are pooled, so that a chunk serves several rows: a wide row of
// 37 values took three chunks of its own (three allocations, 635 bytes)
// when each DecodeInto had its own arena. A pooled arena keeps its
// current chunks, and the payloads their strings point into, until the
// chunks are used up. The pool keeps a Decoder free of state between
// records and safe for concurrent use.
type arena struct {
	words []uint64 // numbers, decimals, UUIDs; no pointers, not scanned
	strs  []string
	bins  [][]byte
}

// Room for this many values at a time: a chunk serves a few wide rows
// and stays small enough that one value kept long keeps little alive.
const chunkValues = 64

var arenas = sync.Pool{New: func() any { return new(arena) }}

// eface is the layout of an interface value holding a non-pointer type.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	tString  = typeOf("")
	tBytes   = typeOf([]byte(nil))
	tInt64   = typeOf(int64(0))
	tFloat64 = typeOf(float64(0))
	tInt32   = typeOf(int32(0))
	tTime    = typeOf(arrow.Timestamp(0))
	tDecimal = typeOf(decimal128.Num{})
)

func box(typ, data unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, data
	return v
}

// slot returns a fresh zeroed word.
func (a *arena) slot() unsafe.Pointer {
	if len(a.words) == 0 {
		a.words = make([]uint64, chunkValues)
	}
	p := &a.words[0]
	a.words = a.words[1:]
	return unsafe.Pointer(p)
}

func (a *arena) str(v string) any {
	if len(a.strs) == 0 {
		a.strs = make([]string, chunkValues)
	}
	p := &a.strs[0]
	*p = v
	a.strs = a.strs[1:]
	return box(tString, unsafe.Pointer(p))
}

func (a *arena) bytes(v []byte) any {
	if len(a.bins) == 0 {
		a.bins = make([][]byte, chunkValues/2)
	}
	p := &a.bins[0]
	*p = v
	a.bins = a.bins[1:]
	return box(tBytes, unsafe.Pointer(p))
}

func (a *arena) int64(v int64) any {
	p := a.slot()
	*(*int64)(p) = v
	return box(tInt64, p)
}

func (a *arena) float64(v float64) any {
	p := a.slot()
	*(*float64)(p) = v
	return box(tFloat64, p)
}

func (a *arena) int32(v int32) any {
	p := a.slot()
	*(*int32)(p) = v
	return box(tInt32, p)
}

func (a *arena) timestamp(v int64) any {
	p := a.slot()
	*(*int64)(p) = v
	return box(tTime, p)
}

// decimal takes two words of a chunk: decimal128.Num is two 8-byte
// halves, aligned as the words are.
func (a *arena) decimal(v decimal128.Num) any {
	if len(a.words) < 2 {
		a.words = make([]uint64, chunkValues)
	}
	p := unsafe.Pointer(&a.words[0])
	a.words = a.words[2:]
	*(*decimal128.Num)(p) = v
	return box(tDecimal, p)
}
