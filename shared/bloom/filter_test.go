package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestFalsePositiveRate adds 100k values and checks that every one is found
// and that 100k other values hit at about the target rate.
func TestFalsePositiveRate(t *testing.T) {
	const n = 100_000
	for _, p := range []float64{0.01, 0.001} {
		t.Run(strconv.FormatFloat(p, 'g', -1, 64), func(t *testing.T) {
			f := New(n, p)
			for i := range n {
				f.Add([]byte("tenant-" + strconv.Itoa(i)))
			}
			for i := range n {
				if !f.MayContain([]byte("tenant-" + strconv.Itoa(i))) {
					t.Fatalf("false negative for value %d", i)
				}
			}
			hits := 0
			for i := n; i < 2*n; i++ {
				if f.MayContain([]byte("tenant-" + strconv.Itoa(i))) {
					hits++
				}
			}
			rate := float64(hits) / n
			t.Logf("target %g: measured %g with %d bits and %d hashes", p, rate, f.Bits(), f.Hashes())
			if rate > 1.3*p || rate < 0.5*p {
				t.Fatalf("false-positive rate %g, want about %g", rate, p)
			}
			if f.Count() != n {
				t.Fatalf("count %d, want %d", f.Count(), n)
			}
		})
	}
}

func TestSizing(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		p      float64
		bits   uint64
		hashes int
	}{
		// m = ceil(-n ln p / ln2²), rounded up to 64; k = round(m/n ln 2).
		{"1000 at 1%", 1000, 0.01, 9600, 7},
		{"no items", 0, 0.01, 64, 30},
		{"rate clamped", 1000, 0.9, 1472, 1},
		{"huge", 1 << 40, 0.01, MaxBits, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(c.n, c.p)
			if f.Bits() != c.bits || f.Hashes() != c.hashes {
				t.Fatalf("bits %d hashes %d, want %d and %d", f.Bits(), f.Hashes(), c.bits, c.hashes)
			}
		})
	}
}

func sampleFilter() *Filter {
	f := New(1000, 0.01)
	f.Column = "tenant"
	for i := range 1000 {
		f.Add([]byte("v" + strconv.Itoa(i)))
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	f := sampleFilter()
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n != f.Size() {
		t.Fatalf("WriteTo returned %d, wrote %d, Size %d", n, buf.Len(), f.Size())
	}
	g, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if g.Column != "tenant" || g.Count() != 1000 || g.Bits() != f.Bits() || g.Hashes() != f.Hashes() {
		t.Fatalf("read %+v", g)
	}
	for i := range 1000 {
		if !g.MayContain([]byte("v" + strconv.Itoa(i))) {
			t.Fatalf("value %d lost in the round trip", i)
		}
	}
	// Known layout: the header fields sit where the package doc says.
	var again bytes.Buffer
	f.WriteTo(&again)
	b := again.Bytes()
	if string(b[:4]) != "IWBF" || binary.LittleEndian.Uint16(b[4:]) != 1 || b[6] != 1 ||
		binary.LittleEndian.Uint16(b[8:]) != 6 || string(b[10:16]) != "tenant" ||
		binary.LittleEndian.Uint64(b[16:]) != 1000 || binary.LittleEndian.Uint64(b[24:]) != f.Bits() ||
		binary.LittleEndian.Uint32(b[32:]) != uint32(f.Hashes()) || len(b) != 36+int(f.Bits()/8)+4 {
		t.Fatalf("layout differs from the documented one: % x", b[:40])
	}
}

// TestKnownHash pins hash function 1 so that a change to it, which would
// make every stored sidecar unreadable, fails here.
func TestKnownHash(t *testing.T) {
	h1, h2 := hashes([]byte("acme"))
	f := New(10, 0.01)
	f.Add([]byte("acme"))
	var set []uint64
	for j := uint64(0); j < f.Bits(); j++ {
		if f.words[j/64]&(1<<(j%64)) != 0 {
			set = append(set, j)
		}
	}
	if len(set) == 0 || len(set) > f.Hashes() {
		t.Fatalf("bits set: %v", set)
	}
	for i := uint64(0); i < uint64(f.Hashes()); i++ {
		j := (h1 + i*h2) % f.Bits()
		if f.words[j/64]&(1<<(j%64)) == 0 {
			t.Fatalf("bit %d of hash %d not set", j, i)
		}
	}
	// XXH64("acme", seed 0) and its SplitMix64 finalizer, computed by an
	// independent implementation of the specification.
	if h1 != 0xbb189bfb846fec0c || h2 != 0x11cf678db6d5485 {
		t.Fatalf("hashes of acme: %#x %#x", h1, h2)
	}
}

func TestReadRejects(t *testing.T) {
	var buf bytes.Buffer
	sampleFilter().WriteTo(&buf)
	good := buf.Bytes()
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"bad magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"parquet file", []byte("PAR1\x15\x04\x15\x10\x15\x14L"), "bad magic"},
		{"empty", nil, "truncated in the header"},
		{"version", mutate(func(b []byte) []byte { b[4] = 9; return b }), "version 9"},
		{"hash function", mutate(func(b []byte) []byte { b[6] = 7; return b }), "unknown hash function 7"},
		{"flipped bit in bitset", mutate(func(b []byte) []byte { b[100] ^= 0x10; return b }), "checksum mismatch"},
		{"flipped count", mutate(func(b []byte) []byte { b[16] ^= 1; return b }), "checksum mismatch"},
		{"bad checksum", mutate(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), "checksum mismatch"},
		{"truncated bitset", good[:200], "truncated in the bitset"},
		{"truncated checksum", good[:len(good)-2], "truncated in the checksum"},
		{"bit count not a multiple of 64", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 100); return b }), "bit count 100"},
		{"bit count huge", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 1<<40); return b }), "bit count"},
		{"no hashes", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[32:], 0); return b }), "hash count 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrCorrupt saying %q", err, c.want)
			}
		})
	}
}

func TestReadFailingReader(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := Read(&failingReader{err: boom})
	if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v, want the reader's error and not ErrCorrupt", err)
	}
}

type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) { return 0, f.err }

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	sampleFilter().WriteTo(&buf)
	f.Add(buf.Bytes())
	small := New(1, 0.5)
	small.Column = "c"
	small.Add([]byte("x"))
	buf.Reset()
	small.WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("IWBF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever reads must write back to the same bytes.
		var out bytes.Buffer
		if _, err := g.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data[:out.Len()]) {
			t.Fatal("read and written bytes differ")
		}
		g.MayContain(data)
	})
}

func BenchmarkAdd(b *testing.B) {
	f := New(b.N, 0.01)
	vals := make([][]byte, 1024)
	for i := range vals {
		vals[i] = []byte(strconv.FormatUint(rand.Uint64(), 36))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Add(vals[i%len(vals)])
	}
}
