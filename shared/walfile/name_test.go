package walfile

import (
	"os"
	"path/filepath"
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

func FuzzParse(f *testing.F) {
	f.Add("ready_clicks_0_100-199_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("active_a_b_1_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Add("uploaded_t_1_1-1_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.json")
	f.Add("ready_x_-1_1-2_0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
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
