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

	// A row group of about 40 MB of values in 8 columns.
	big := &Columns{Cols: make([]Column, 8)}
	v := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < 40000; i++ {
		big.Cols[i%8].AppendBytesCopy(v)
	}
	big.empty()
	kept := 0
	for i := range big.Cols {
		for _, b := range big.Cols[i].blocks {
			if len(b) != 0 {
				t.Fatalf("column %d keeps a block that is not empty", i)
			}
			kept += cap(b)
		}
	}
	if kept > keepBlockBytes {
		t.Errorf("PutColumns keeps %d bytes of blocks, want at most %d", kept, keepBlockBytes)
	}
	if kept == 0 {
		t.Errorf("PutColumns keeps no block for the next row group")
	}
	// Reused, a kept block takes new values from its start.
	first := big.Cols[0].blocks[0][:1]
	big.Cols[0].AppendBytesCopy([]byte("y"))
	if got := big.Cols[0].Bytes[0]; string(got) != "y" || &got[0] != &first[0] {
		t.Errorf("after empty the first value is %q, not in the kept block", got)
	}
}
