package inspect

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/walfile"
)

// walFile is a file to create in a test WAL directory.
type walFile struct {
	name string
	size int
	age  time.Duration
}

func makeWAL(t *testing.T, now time.Time, files []walFile) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), f.size), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := now.Add(-f.age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWriteListTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	u1 := uuid.MustParse("11111111-1111-4111-8111-111111111111")
	u2 := uuid.MustParse("22222222-2222-4222-8222-222222222222")
	u3 := uuid.MustParse("33333333-3333-4333-8333-333333333333")
	ready := walfile.Name{State: walfile.Ready, Topic: "web_clicks", Partition: 0, Start: 100, End: 199, UUID: u1}
	tests := []struct {
		name  string
		files []walFile
		want  string
	}{
		{
			name:  "empty directory",
			files: nil,
			want:  "STATE  TOPIC  PARTITION  START  END  UUID  SIZE  AGE\n",
		},
		{
			name: "every state, unknown names left out",
			files: []walFile{
				{ready.String(), 3 << 20, 90 * time.Second},
				{ready.As(walfile.Uploaded).String(), 120, 30 * time.Second},
				{walfile.Name{State: walfile.Active, Topic: "web_clicks", Partition: 0, UUID: u2}.String(), 512, 4 * time.Second},
				{walfile.Name{State: walfile.Ready, Topic: "orders", Partition: 12, Start: 7, End: 7, UUID: u3}.String(), 1536, 50 * time.Hour},
				{"tmp_x_" + ready.String(), 10, 0},
				{".consumer.lock", 0, 0},
				{"notes.txt", 5, 0},
			},
			want: `STATE     TOPIC       PARTITION  START  END  UUID                                  SIZE     AGE
ready     orders      12         7      7    33333333-3333-4333-8333-333333333333  1.5 KiB  2d02h
active    web_clicks  0          -      -    22222222-2222-4222-8222-222222222222  512 B    4s
ready     web_clicks  0          100    199  11111111-1111-4111-8111-111111111111  3.0 MiB  1m30s
uploaded  web_clicks  0          100    199  11111111-1111-4111-8111-111111111111  120 B    30s
`,
		},
		{
			name:  "modified in the future",
			files: []walFile{{ready.String(), 1, -time.Hour}},
			want: `STATE  TOPIC       PARTITION  START  END  UUID                                  SIZE  AGE
ready  web_clicks  0          100    199  11111111-1111-4111-8111-111111111111  1 B   0s
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := List(makeWAL(t, now, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteList(&out, entries, now, FormatTable); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestWriteListJSON(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	u := uuid.MustParse("11111111-1111-4111-8111-111111111111")
	active := walfile.Name{State: walfile.Active, Topic: "t", Partition: 2, UUID: u}
	ready := walfile.Name{State: walfile.Ready, Topic: "t", Partition: 2, Start: 0, End: 41, UUID: u}
	dir := makeWAL(t, now, []walFile{{active.String(), 10, 1500 * time.Millisecond}, {ready.String(), 2048, time.Minute}})
	entries, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteList(&out, entries, now, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in:\n%s", err, out.String())
	}
	want := []map[string]any{
		{"state": "active", "topic": "t", "partition": 2.0, "start": nil, "end": nil, "uuid": u.String(),
			"size": 10.0, "ageSeconds": 1.5, "file": filepath.Join(dir, active.String())},
		{"state": "ready", "topic": "t", "partition": 2.0, "start": 0.0, "end": 41.0, "uuid": u.String(),
			"size": 2048.0, "ageSeconds": 60.0, "file": filepath.Join(dir, ready.String())},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		for k, v := range want[i] {
			if gv, ok := got[i][k]; !ok || gv != v {
				t.Errorf("entry %d key %s = %v (present %v), want %v", i, k, gv, ok, v)
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("entry %d has keys %v", i, got[i])
		}
	}

	// An empty directory is an empty array, not null.
	out.Reset()
	if err := WriteList(&out, nil, now, FormatJSON); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("empty list = %q", out.String())
	}
}

func TestListErrors(t *testing.T) {
	if _, err := List(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("List of a missing directory succeeded")
	}
	if err := WriteList(&bytes.Buffer{}, nil, time.Now(), "yaml"); err == nil || !strings.Contains(err.Error(), `unknown output format "yaml"`) {
		t.Fatalf("WriteList yaml: %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{64 << 20, "64.0 MiB"}, {5<<30 + 512<<20, "5.5 GiB"}, {3 << 40, "3.0 TiB"}, {1 << 62, "4.0 EiB"},
	}
	for _, tc := range tests {
		if got := FormatBytes(tc.n); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {999 * time.Millisecond, "0s"}, {59 * time.Second, "59s"}, {60 * time.Second, "1m00s"},
		{3*time.Minute + 7*time.Second, "3m07s"}, {time.Hour, "1h00m"}, {47*time.Hour + 59*time.Minute, "47h59m"},
		{48 * time.Hour, "2d00h"}, {100*24*time.Hour + 5*time.Hour, "100d05h"},
	}
	for _, tc := range tests {
		if got := FormatAge(tc.d); got != tc.want {
			t.Errorf("FormatAge(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
