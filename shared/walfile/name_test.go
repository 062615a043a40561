package walfile

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestNameRoundTrip(t *testing.T) {
	id := uuid.MustParse("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11")
	tests := []struct {
		name string
		n    Name
		want string
	}{
		{"active", Name{State: Active, Topic: "clicks", Partition: 3, UUID: id},
			"active_clicks_3_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet"},
		{"ready", Name{State: Ready, Topic: "clicks", Partition: 0, Start: 100, End: 199, UUID: id},
			"ready_clicks_0_100-199_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet"},
		{"uploaded", Name{State: Uploaded, Topic: "clicks", Partition: 12, Start: 0, End: 0, UUID: id},
			"uploaded_clicks_12_0-0_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json"},
		{"topic with underscores and digits", Name{State: Ready, Topic: "web_events_7_2", Partition: 5, Start: 7, End: 9, UUID: id},
			"ready_web_events_7_2_5_7-9_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet"},
		{"topic with dots and dashes", Name{State: Ready, Topic: "a.b-c", Partition: 2147483647, Start: 1 << 40, End: 1<<40 + 5, UUID: id},
			"ready_a.b-c_2147483647_1099511627776-1099511627781_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
			back, err := Parse(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if back != tc.n {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.want, back, tc.n)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"ready_clicks_0_5-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet", // end before start
		"ready_clicks_0_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json",    // wrong extension
		"uploaded_clicks_0_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet",
		"ready_clicks_x_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet",
		"ready_clicks_0_1-4_not-a-uuid.parquet",
		"ready_clicks_99999999999_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet", // partition overflows int32
		"tmp_x_ready_clicks_0_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet",
		"ready__0_1-4_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet",
	} {
		if n, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, n)
		}
	}
}

// The names' grammar as regular expressions: what Parse accepts, written
// the other way, to check it against.
var (
	activeGrammar = regexp.MustCompile(`^active_(.+)_(\d+)_([0-9a-f-]{36})\.parquet$`)
	closedGrammar = regexp.MustCompile(`^(ready|uploaded)_(.+)_(\d+)_(\d+)-(\d+)_([0-9a-f-]{36})\.(parquet|json)$`)
)

// parseByGrammar parses base with the regular expressions; ok is false
// for a name they do not match, or whose numbers or UUID do not parse.
func parseByGrammar(base string) (n Name, ok bool) {
	num := func(s string, bits int) int64 {
		v, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			ok = false
		}
		return v
	}
	id := func(s string) uuid.UUID {
		u, err := uuid.Parse(s)
		if err != nil {
			ok = false
		}
		return u
	}
	ok = true
	if m := activeGrammar.FindStringSubmatch(base); m != nil {
		n = Name{State: Active, Topic: m[1], Partition: int32(num(m[2], 32)), UUID: id(m[3])}
	} else if m := closedGrammar.FindStringSubmatch(base); m != nil {
		n = Name{State: Ready, Topic: m[2], Partition: int32(num(m[3], 32)), Start: num(m[4], 64), End: num(m[5], 64), UUID: id(m[6])}
		if m[1] == "uploaded" {
			n.State = Uploaded
		}
		if (n.State == Ready) != (m[7] == "parquet") || n.End < n.Start {
			ok = false
		}
	} else {
		ok = false
	}
	if strings.Contains(n.Topic, "/") {
		ok = false
	}
	return n, ok
}

func FuzzParse(f *testing.F) {
	f.Add("ready_clicks_0_100-199_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("active_a_b_1_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("uploaded_t_1_1-1_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json")
	f.Add("ready_x_-1_1-2_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("ready_a\nb_1_1-2_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("ready_a_1_1-2-3_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("ready_a_1_1-2_0B8F3A52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("active_a_1_1-2_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json")
	f.Add("uploaded__1_1-2_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		// Parse accepts exactly what the grammar does, with the same fields.
		if want, ok := parseByGrammar(s); ok != (err == nil) || (ok && n != want) {
			t.Fatalf("Parse(%q) = %+v, %v; the grammar gives %+v, ok %v", s, n, err, want, ok)
		}
		if err != nil {
			return
		}
		// Whatever parses formats back to a name that parses to the same.
		again, err := Parse(n.String())
		if err != nil || again != n {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", s, n, n.String(), again, err)
		}
	})
}

func TestListSkipsTmpAndUnknownAndSorts(t *testing.T) {
	dir := t.TempDir()
	id := uuid.New()
	names := []string{
		Name{State: Ready, Topic: "t", Partition: 1, Start: 50, End: 60, UUID: id}.String(),
		Name{State: Ready, Topic: "t", Partition: 0, Start: 10, End: 20, UUID: uuid.New()}.String(),
		Name{State: Active, Topic: "t", Partition: 0, UUID: uuid.New()}.String(),
		"tmp_123_ready_t_0_1-2_" + uuid.NewString() + ".parquet",
		"notes.txt",
		".consumer.lock",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Name.String())
	}
	want := []string{names[2], names[1], names[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

// TestRemoveTmpKeepsAnotherRolesInFlightFile: one role restarting alone
// must not delete the marker another role is writing this instant, only
// what a crash left long ago.
func TestRemoveTmpKeepsAnotherRolesInFlightFile(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "tmp_"+uuid.NewString()+"_uploaded_t_0_1-2_"+uuid.NewString()+".json")
	fresh := filepath.Join(dir, "tmp_"+uuid.NewString()+"_uploaded_t_0_3-4_"+uuid.NewString()+".json")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * TmpSafetyAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTmp(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("tmp file left by a crash long ago still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("another role's in-flight tmp file was deleted: %v", err)
	}
}

func TestMarkerAtomicRoundTrip(t *testing.T) {
	dir := t.TempDir()
	n := Name{State: Ready, Topic: "t", Partition: 1, Start: 5, End: 9, UUID: uuid.New()}
	m := Marker{Object: "abfs://c@a.dfs.core.windows.net/wh/data/" + n.UUID.String() + ".parquet", Size: 1234,
		Blooms: map[string]string{"event_id": "abfs://c@a/x.bloom"}}
	if err := WriteMarker(dir, n, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMarker(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	if got.Object != m.Object || got.Size != m.Size || got.Blooms["event_id"] != m.Blooms["event_id"] {
		t.Fatalf("ReadMarker = %+v, want %+v", got, m)
	}
	if _, err := os.Stat(filepath.Join(dir, n.As(Uploaded).String())); err != nil {
		t.Fatal(err)
	}
}

func TestLockExcludesSecondHolder(t *testing.T) {
	// The directory does not exist yet: the first role to start creates it.
	dir := filepath.Join(t.TempDir(), "wal")
	if Held(dir, "consumer") {
		t.Fatal("lock held before anyone took it")
	}
	l, err := AcquireLock(dir, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	if !Held(dir, "consumer") {
		t.Fatal("lock not seen as held")
	}
	if _, err := AcquireLock(dir, "consumer"); err == nil {
		t.Fatal("a second consumer took the lock")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if Held(dir, "consumer") {
		t.Fatal("lock still held after release")
	}
}

// BenchmarkList lists a WAL directory as a rotation of 1,600 segments
// leaves it (a ready file, its checksum record and its marker each), the
// listing every role makes at each scan or pass:
//
//	go test -run '^$' -bench List ./shared/walfile/
func BenchmarkList(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 1600; i++ {
		n := Name{State: Ready, Topic: "events_wide", Partition: int32(i % 8), Start: int64(i) * 125, End: int64(i)*125 + 124, UUID: uuid.New()}
		for _, name := range []string{n.String(), n.As(Uploaded).String(), SumName(n.UUID)} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		files, err := List(dir)
		if err != nil || len(files) != 3200 {
			b.Fatalf("listed %d files, %v", len(files), err)
		}
		for _, f := range files {
			_ = f.Name.String()
		}
	}
}
