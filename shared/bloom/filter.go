package bloom

import (
	"math"

	"github.com/cespare/xxhash/v2"
)

// Limits of a filter's shape.
const (
	// MaxBits is the largest bit count (a 1 GiB bitset).
	MaxBits = 1 << 33
	// MaxHashes is the largest hash count.
	MaxHashes = 30
	// DefaultFPRate is the false-positive rate the uploader builds for.
	DefaultFPRate = 0.01
)

// Filter is a bloom filter over canonical value encodings.
type Filter struct {
	// Column is the name of the column the filter covers; the sidecar
	// records it.
	Column string

	words []uint64
	m     uint64 // bits
	k     uint32 // hashes
	n     uint64 // values added
}

// New returns an empty filter sized for expectedItems values at a false
// positive rate of fpRate. expectedItems below 1 counts as 1; fpRate is
// clamped to [1e-9, 0.5]; the size to MaxBits.
func New(expectedItems int, fpRate float64) *Filter {
	n := float64(max(expectedItems, 1))
	p := min(max(fpRate, 1e-9), 0.5)
	if math.IsNaN(fpRate) {
		p = DefaultFPRate
	}
	bits := math.Ceil(-n * math.Log(p) / (math.Ln2 * math.Ln2))
	m := uint64(min(bits, MaxBits))
	m = min((m+63)/64*64, MaxBits)
	k := uint32(math.Round(float64(m) / n * math.Ln2))
	k = min(max(k, 1), MaxHashes)
	return &Filter{words: make([]uint64, m/64), m: m, k: k}
}

// Add adds a value's canonical encoding.
func (f *Filter) Add(v []byte) {
	h1, h2 := hashes(v)
	for i := uint64(0); i < uint64(f.k); i++ {
		j := (h1 + i*h2) % f.m
		f.words[j/64] |= 1 << (j % 64)
	}
	f.n++
}

// MayContain reports whether v may have been added: false means it surely
// was not.
func (f *Filter) MayContain(v []byte) bool {
	h1, h2 := hashes(v)
	for i := uint64(0); i < uint64(f.k); i++ {
		j := (h1 + i*h2) % f.m
		if f.words[j/64]&(1<<(j%64)) == 0 {
			return false
		}
	}
	return true
}

// Count returns the number of values added.
func (f *Filter) Count() uint64 { return f.n }

// Bits returns the filter's bit count.
func (f *Filter) Bits() uint64 { return f.m }

// Hashes returns the number of bits each value sets.
func (f *Filter) Hashes() int { return int(f.k) }

// hashes returns the two hashes of hash function 1 (see the package doc).
func hashes(v []byte) (uint64, uint64) {
	h1 := xxhash.Sum64(v)
	z := h1
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return h1, z | 1
}
