package bloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Sidecar format constants; see the package doc.
const (
	Magic       = "IWBF"
	Version     = 1
	HashXXH64   = 1
	headerFixed = 10 // magic, version, hash function, reserved, name length
)

// ErrCorrupt is wrapped by every error Read returns for bytes that are not
// a valid sidecar.
var ErrCorrupt = errors.New("corrupt bloom sidecar")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteTo writes the filter in the sidecar format.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if len(f.Column) > 0xffff {
		return 0, fmt.Errorf("write bloom sidecar: column name of %d bytes is too long", len(f.Column))
	}
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	var b []byte
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, HashXXH64, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(f.Column)))
	b = append(b, f.Column...)
	b = binary.LittleEndian.AppendUint64(b, f.n)
	b = binary.LittleEndian.AppendUint64(b, f.m)
	b = binary.LittleEndian.AppendUint32(b, f.k)
	bw.Write(b)
	var word [8]byte
	for _, x := range f.words {
		binary.LittleEndian.PutUint64(word[:], x)
		bw.Write(word[:])
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("write bloom sidecar: %w", err)
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return 0, fmt.Errorf("write bloom sidecar: %w", err)
	}
	return f.Size(), nil
}

// Size returns the length of the filter's sidecar in bytes.
func (f *Filter) Size() int64 {
	return int64(headerFixed+len(f.Column)+8+8+4) + int64(f.m/8) + 4
}

// Read reads a sidecar written by WriteTo. Bytes that are not a sidecar
// (wrong magic, unknown version or hash function, impossible sizes, a
// checksum mismatch, a truncated file) give an error wrapping ErrCorrupt
// that says which check failed and where.
func Read(r io.Reader) (*Filter, error) {
	crc := crc32.New(castagnoli)
	cr := &checksumReader{r: bufio.NewReaderSize(r, 64<<10), crc: crc}
	fixed := make([]byte, headerFixed)
	if err := cr.full(fixed, "header"); err != nil {
		return nil, err
	}
	if string(fixed[:4]) != Magic {
		return nil, fmt.Errorf("%w: bad magic %q at offset 0, want %q: not a bloom sidecar", ErrCorrupt, fixed[:4], Magic)
	}
	if v := binary.LittleEndian.Uint16(fixed[4:]); v != Version {
		return nil, fmt.Errorf("%w: version %d at offset 4, this reader knows version %d", ErrCorrupt, v, Version)
	}
	if h := fixed[6]; h != HashXXH64 {
		return nil, fmt.Errorf("%w: unknown hash function %d at offset 6", ErrCorrupt, h)
	}
	name := make([]byte, binary.LittleEndian.Uint16(fixed[8:]))
	if err := cr.full(name, "column name"); err != nil {
		return nil, err
	}
	shape := make([]byte, 20)
	if err := cr.full(shape, "filter shape"); err != nil {
		return nil, err
	}
	f := &Filter{
		Column: string(name),
		n:      binary.LittleEndian.Uint64(shape[0:]),
		m:      binary.LittleEndian.Uint64(shape[8:]),
		k:      binary.LittleEndian.Uint32(shape[16:]),
	}
	off := headerFixed + len(name)
	if f.m == 0 || f.m%64 != 0 || f.m > MaxBits {
		return nil, fmt.Errorf("%w: bit count %d at offset %d is not a positive multiple of 64 up to %d", ErrCorrupt, f.m, off+8, uint64(MaxBits))
	}
	if f.k < 1 || f.k > MaxHashes {
		return nil, fmt.Errorf("%w: hash count %d at offset %d is not between 1 and %d", ErrCorrupt, f.k, off+16, MaxHashes)
	}
	// The bitset is read in chunks, so that a corrupt bit count in a short
	// file does not allocate the size it claims.
	words := f.m / 64
	chunk := make([]byte, 64<<10)
	f.words = make([]uint64, 0, min(words, 1<<16))
	for uint64(len(f.words)) < words {
		n := min(uint64(len(chunk)), (words-uint64(len(f.words)))*8)
		if err := cr.full(chunk[:n], "bitset"); err != nil {
			return nil, err
		}
		for i := uint64(0); i < n; i += 8 {
			f.words = append(f.words, binary.LittleEndian.Uint64(chunk[i:]))
		}
	}
	want := crc.Sum32()
	sum := make([]byte, 4)
	if _, err := io.ReadFull(cr.r, sum); err != nil {
		return nil, readError("checksum", cr.off, err)
	}
	if got := binary.LittleEndian.Uint32(sum); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch: stored %08x, computed %08x over %d bytes", ErrCorrupt, got, want, cr.off)
	}
	return f, nil
}

// checksumReader feeds what it reads to the running checksum.
type checksumReader struct {
	r   io.Reader
	crc hash.Hash32
	off int64
}

func (c *checksumReader) full(p []byte, what string) error {
	n, err := io.ReadFull(c.r, p)
	c.crc.Write(p[:n])
	if err != nil {
		return readError(what, c.off, err)
	}
	c.off += int64(n)
	return nil
}

// readError tells a truncated sidecar (corrupt) from a failing reader.
func readError(what string, off int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated in the %s at offset %d", ErrCorrupt, what, off)
	}
	return fmt.Errorf("read bloom sidecar %s at offset %d: %w", what, off, err)
}
