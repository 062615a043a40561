package houserules

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxLines is the size a non-test file may reach without a reason.
const maxLines = 700

// sizeReasonWindow is how many lines from the top of a file the "// size:"
// reason may sit.
const sizeReasonWindow = 40

// notRoles are the top-level directories that are not roles. Every other
// top-level directory holding Go code is a role.
var notRoles = []string{"cmd", "shared", "internal", "deploy", "docs", "e2e", "node_modules"}

// allowed lists the known imports that break the rules today, each with why
// it is still here. An entry is a "file -> import" pair relative to the
// module; anything else that breaks a rule fails the test.
var allowed = map[string]string{}

// goFile is one non-test Go file of the module.
type goFile struct {
	rel     string // path relative to the module root, slash separated
	top     string // its top-level directory
	imports []string
	lines   int
	head    []byte // the first sizeReasonWindow lines
}

// moduleRoot walks up from the test's directory to go.mod and returns the
// directory and the module path.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if mod, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(mod)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// sourceFiles reads every non-test Go file of the module.
func sourceFiles(t *testing.T, root, module string) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ast, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		f := goFile{rel: rel, top: strings.SplitN(rel, "/", 2)[0]}
		if !strings.Contains(rel, "/") {
			f.top = ""
		}
		for _, imp := range ast.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if local, ok := strings.CutPrefix(p, module+"/"); ok {
				f.imports = append(f.imports, local)
			}
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var head bytes.Buffer
		for sc.Scan() {
			f.lines++
			if f.lines <= sizeReasonWindow {
				head.Write(sc.Bytes())
				head.WriteByte('\n')
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		f.head = head.Bytes()
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found under the module root")
	}
	return files
}

// isRole says whether a top-level directory is a role.
func isRole(top string) bool {
	return top != "" && !slices.Contains(notRoles, top)
}

// topOf returns the top-level directory of a module-relative import path.
func topOf(imp string) string {
	return strings.SplitN(imp, "/", 2)[0]
}

// importViolations returns the imports of files that break the layout, as
// "file -> import" with the rule broken.
func importViolations(files []goFile) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, imp := range f.imports {
			to := topOf(imp)
			key := f.rel + " -> " + imp
			switch {
			case isRole(f.top) && to == "internal":
				out[key] = "a role imports internal/"
			case isRole(f.top) && isRole(to) && to != f.top:
				out[key] = "a role imports another role"
			case f.top == "shared" && to == "internal":
				out[key] = "shared/ imports internal/"
			case f.top == "shared" && isRole(to):
				out[key] = "shared/ imports a role"
			}
		}
	}
	return out
}

// TestRolesMeetOnlyInShared checks that roles never import each other or
// internal/, and that shared/ imports neither.
func TestRolesMeetOnlyInShared(t *testing.T) {
	root, module := moduleRoot(t)
	files := sourceFiles(t, root, module)
	var roles []string
	for _, f := range files {
		if isRole(f.top) && !slices.Contains(roles, f.top) {
			roles = append(roles, f.top)
		}
	}
	for _, want := range []string{"consumer", "uploader", "committer", "supervisor"} {
		if !slices.Contains(roles, want) {
			t.Errorf("role %s not found; roles seen: %v", want, roles)
		}
	}
	found := importViolations(files)
	for key, rule := range found {
		if _, ok := allowed[key]; ok {
			continue
		}
		t.Errorf("%s: %s; roles meet only in shared/ and the WAL directory (README.md, Layout)", key, rule)
	}
	for key := range allowed {
		if _, ok := found[key]; !ok {
			t.Errorf("allow-list entry %q no longer matches a violation: remove it", key)
		}
	}
}

// TestFilesStaySmall checks that no non-test Go file passes maxLines lines
// without a "// size:" reason near its top.
func TestFilesStaySmall(t *testing.T) {
	root, module := moduleRoot(t)
	for _, f := range sourceFiles(t, root, module) {
		if f.lines <= maxLines {
			continue
		}
		if bytes.Contains(f.head, []byte("// size:")) {
			continue
		}
		t.Errorf("%s has %d lines, over %d: split it by concept, or write why it is one file in a \"// size: <reason>\" comment in its first %d lines",
			f.rel, f.lines, maxLines, sizeReasonWindow)
	}
}

// TestRulesCatchViolations feeds the rule checker files that break each rule,
// so a checker that lets everything through fails here.
func TestRulesCatchViolations(t *testing.T) {
	files := []goFile{
		{rel: "consumer/a.go", top: "consumer", imports: []string{"uploader", "shared/config"}},
		{rel: "maintainer/b.go", top: "maintainer", imports: []string{"internal/status"}},
		{rel: "shared/c/c.go", top: "shared", imports: []string{"committer", "internal/redact", "shared/walfile"}},
		{rel: "cmd/ingestor/main.go", top: "cmd", imports: []string{"consumer", "internal/status"}},
		{rel: "internal/bench/d.go", top: "internal", imports: []string{"shared/config"}},
	}
	got := importViolations(files)
	want := map[string]string{
		"consumer/a.go -> uploader":          "a role imports another role",
		"maintainer/b.go -> internal/status": "a role imports internal/",
		"shared/c/c.go -> committer":         "shared/ imports a role",
		"shared/c/c.go -> internal/redact":   "shared/ imports internal/",
	}
	if len(got) != len(want) {
		t.Errorf("violations = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("violation %q = %q, want %q", k, got[k], v)
		}
	}
}
