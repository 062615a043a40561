package bloom

import "testing"

func TestSidecarName(t *testing.T) {
	for col, want := range map[string]string{
		"tenant":   "u.bloom.tenant",
		"a b":      "u.bloom.a~20b",
		"a~b":      "u.bloom.a~7Eb",
		"x/y":      "u.bloom.x~2Fy",
		"Ünïcode":  "u.bloom.~C3~9Cn~C3~AFcode",
		"dot.ted_": "u.bloom.dot.ted_",
	} {
		if got := SidecarName("u", col); got != want {
			t.Errorf("SidecarName(%q) = %q, want %q", col, got, want)
		}
	}
}
