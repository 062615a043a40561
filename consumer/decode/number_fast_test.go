package decode

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// plainInt, the one-pass reading of the usual integers, gives exactly
// what the general split gives wherever it answers, and declines
// everything else, for every shift a column uses (0 for int and long, 3
// and 6 for epoch milliseconds into micro- and nanosecond timestamps).
func TestPlainIntMatchesSplit(t *testing.T) {
	inputs := []string{"", "-", "+1", "0", "-0", "00", "01", "-01", "1", "-1", "7", "42", "-42",
		"999999999999999", "1000000000000000", "999999999999999999", "-999999999999999999",
		"1000000000000000000", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"1.0", "1e3", "1E3", "1.5", " 1", "1 ", "1a", "a1", "１", "--1", "0x10", "12345678901234567"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := r.Int64N(1 << 62)
		if r.IntN(2) == 0 {
			n = -n
		}
		inputs = append(inputs, strconv.FormatInt(n>>r.IntN(62), 10))
	}
	answered := 0
	for _, s := range inputs {
		for _, shift := range []int{0, 3, 6} {
			got, ok := plainInt(s, shift)
			if !ok {
				continue
			}
			answered++
			p, sok := splitNumber(s)
			if !sok {
				t.Errorf("plainInt(%q, %d) = %d, but it is not a JSON number", s, shift, got)
				continue
			}
			want, reason := p.int64Of(shift)
			if reason != "" || got != want {
				t.Errorf("plainInt(%q, %d) = %d, split gives %d (%q)", s, shift, got, want, reason)
			}
		}
	}
	if answered < 3000 {
		t.Errorf("plainInt answered only %d times: the fast path is not taken", answered)
	}
}
