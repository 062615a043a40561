package houserules

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// layoutRow is a row of README.md's Layout table: its path in backquotes.
var layoutRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// TestReadmeLayoutListsEveryPackage checks that README.md's Layout table
// has a row for every top-level directory holding Go code and for every
// package of internal/, so that a new room is announced where the next
// engineer looks first.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	root, _ := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	if next := strings.Index(layout, "\n## "); next >= 0 {
		layout = layout[:next]
	}
	listed := map[string]bool{}
	for _, m := range layoutRow.FindAllStringSubmatch(layout, -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	if len(listed) == 0 {
		t.Fatal("README.md's Layout section has no table rows")
	}
	var want []string
	tops, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range tops {
		name := d.Name()
		if !d.IsDir() || name == "node_modules" || strings.HasPrefix(name, ".") {
			continue
		}
		if name == "internal" {
			inner, err := os.ReadDir(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range inner {
				if p.IsDir() && hasGo(t, filepath.Join(root, name, p.Name())) {
					want = append(want, name+"/"+p.Name())
				}
			}
			continue
		}
		if name == "docs" || hasGo(t, filepath.Join(root, name)) {
			want = append(want, name)
		}
	}
	for _, w := range want {
		// cmd is listed by its binary, cmd/ingestor.
		if !listed[w] && !(w == "cmd" && listed["cmd/ingestor"]) {
			t.Errorf("README.md's Layout table has no row for %s", w)
		}
	}
}

// hasGo reports whether dir or a directory below it holds a Go file.
func hasGo(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(d.Name(), ".go") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
