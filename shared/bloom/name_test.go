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

func TestSidecarDataFile(t *testing.T) {
	for loc, want := range map[string]string{
		"abfs://c@a.dfs.core.windows.net/t/data/" + SidecarName("0b6f", "a b"): "abfs://c@a.dfs.core.windows.net/t/data/0b6f.parquet",
		"/w/t/data/compacted-1.bloom.dot.ted_":                                 "/w/t/data/compacted-1.parquet",
		"/w/t/data/1.parquet":                                                  "",
		"/w/t/data/.bloom.x":                                                   "",
		"/w/t/data/1.bloom.":                                                   "",
		"/w/a.bloom.b/1.parquet":                                               "",
	} {
		got, ok := SidecarDataFile(loc)
		if got != want || ok != (want != "") {
			t.Errorf("SidecarDataFile(%q) = %q, %v; want %q", loc, got, ok, want)
		}
	}
}
