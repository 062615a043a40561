package parquetfmt

import (
	"bytes"
	"testing"
)

// The copies a column makes of its byte values stay what they were
// while more values are appended (blocks never move), whatever their
// sizes, and PutColumns keeps no more than keepBlockBytes of blocks.
func TestCopiedValuesStayWhileBlocksGrow(t *testing.T) {
	c := &Columns{Cols: make([]Column, 2)}
	var want [][]byte
	src := make([]byte, 0, 1<<20)
	for i := 0; i < 5000; i++ {
		n := i % 200
		if i%997 == 0 {
			n = maxBlock + 1 // a value longer than any block
		}
		v := append(src[:0], bytes.Repeat([]byte{byte(i)}, n)...)
		want = append(want, bytes.Clone(v))
		c.Cols[0].AppendBytesCopy(v)
		c.Cols[1].AppendFixedCopy(v[:min(4, len(v))])
		src = v[:0] // the caller's buffer is reused at once
	}
	for i, w := range want {
		if got := c.Cols[0].Bytes[i]; !bytes.Equal(got, w) || cap(got) != len(got) {
			t.Fatalf("value %d: %d bytes (cap %d), want %d bytes of %d", i, len(got), cap(got), len(w), byte(i))
		}
		if got := c.Cols[1].Fixed[i]; !bytes.Equal(got, w[:min(4, len(w))]) {
			t.Fatalf("fixed value %d changed", i)
		}
	}

	// A row group of 4 MB of values in 8 columns, all kept, then one of
	// 40 MB in the first 2: the 6 columns the narrower layout hides still
	// hold their blocks and count, so the blocks kept stay within the
	// bound after both.
	big := &Columns{Cols: make([]Column, 8)}
	v := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < 4000; i++ {
		big.Cols[i%8].AppendBytesCopy(v)
	}
	big.empty()
	if k := keptBytes(t, big); k == 0 || k > DefaultKeptBlockBytes {
		t.Fatalf("after 8 columns the pool keeps %d bytes of blocks, want 1 to %d", k, DefaultKeptBlockBytes)
	}
	big.Cols = big.Cols[:2] // what GetColumns does for a layout of 2
	for i := 0; i < 40000; i++ {
		big.Cols[i%2].AppendBytesCopy(v)
	}
	big.empty()
	if k := keptBytes(t, big); k == 0 || k > DefaultKeptBlockBytes {
		t.Fatalf("after 8 columns then 2 the pool keeps %d bytes of blocks, want 1 to %d", k, DefaultKeptBlockBytes)
	}

	// Reused, a kept block takes new values from its start.
	first := big.Cols[0].blocks[0][:1]
	big.Cols[0].AppendBytesCopy([]byte("y"))
	if got := big.Cols[0].Bytes[0]; string(got) != "y" || &got[0] != &first[0] {
		t.Errorf("after empty the first value is %q, not in the kept block", got)
	}
	big.empty()

	// A smaller bound (a small memory budget) keeps less.
	SetKeptBlockBytes(64 << 10)
	defer SetKeptBlockBytes(DefaultKeptBlockBytes)
	big.Cols = big.Cols[:8]
	for i := 0; i < 4000; i++ {
		big.Cols[i%8].AppendBytesCopy(v)
	}
	big.empty()
	if k := keptBytes(t, big); k > 64<<10 {
		t.Errorf("with SetKeptBlockBytes(64 KiB) the pool keeps %d bytes of blocks", k)
	}
}

// keptBytes is the room of the blocks c keeps, all of them empty.
func keptBytes(t *testing.T, c *Columns) int {
	t.Helper()
	kept := 0
	for i, col := range c.Cols[:cap(c.Cols)] {
		for _, b := range col.blocks {
			if len(b) != 0 {
				t.Fatalf("column %d keeps a block that is not empty", i)
			}
			kept += cap(b)
		}
	}
	return kept
}
