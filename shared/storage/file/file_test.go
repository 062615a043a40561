package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	for loc, want := range map[string]string{
		"file:///wh/db/t/data/x.parquet":    "/wh/db/t/data/x.parquet",
		"file://localhost/wh/x":             "/wh/x",
		"/wh/./db/../x":                     "/wh/x",
		"file:///with%20space/x":            "/with space/x",
		"FILE:///upper/x":                   "/upper/x",
		"file:relative/x":                   "",
		"file://otherhost/x":                "",
		"abfs://c@a.dfs.core.windows.net/x": "",
		"relative/x":                        "",
	} {
		got, err := Path(loc)
		if want == "" {
			if err == nil {
				t.Errorf("Path(%q) = %q, want an error", loc, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Path(%q) = %q, %v; want %q", loc, got, err, want)
		}
	}
}

// TestFailedPutKeepsOld: a Put that fails midway (a short reader, a
// cancelled context) leaves the previous object and no temporary file.
func TestFailedPutKeepsOld(t *testing.T) {
	dir := t.TempDir()
	loc := "file://" + filepath.Join(dir, "obj")
	s := New()
	if err := s.Put(context.Background(), loc, strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), loc, strings.NewReader("new"), 10); err == nil {
		t.Fatal("short put succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, loc, strings.NewReader("new"), 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("put with a cancelled context: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "obj"))
	if err != nil || string(b) != "old" {
		t.Fatalf("object %q, %v; want the old content", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the object", len(entries))
	}
}
