package config

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// docPath is the configuration reference this test keeps honest.
const docPath = "../../docs/configuration.md"

// docRow is one row of the reference's key table.
type docRow struct {
	key, typ, def string
	line          int
}

// readKeyTable returns the rows of the table headed
// "| key | type | default | meaning |" in the reference.
func readKeyTable(t *testing.T) (map[string]docRow, string) {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read the configuration reference: %v", err)
	}
	doc := string(b)
	rows := map[string]docRow{}
	in := false
	for i, line := range strings.Split(doc, "\n") {
		cells := tableCells(line)
		switch {
		case len(cells) == 4 && cells[0] == "key" && cells[1] == "type" && cells[2] == "default":
			if len(rows) > 0 {
				t.Fatalf("%s:%d: a second key table", docPath, i+1)
			}
			in = true
		case in && cells == nil:
			in = false
		case in && strings.HasPrefix(cells[0], "---"):
		case in:
			if len(cells) != 4 {
				t.Fatalf("%s:%d: want 4 cells, got %d: %s", docPath, i+1, len(cells), line)
			}
			key := strings.Trim(cells[0], "`")
			if prev, dup := rows[key]; dup {
				t.Fatalf("%s:%d: key %s listed twice (first at line %d)", docPath, i+1, key, prev.line)
			}
			rows[key] = docRow{key: key, typ: cells[1], def: cells[2], line: i + 1}
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table headed | key | type | default | meaning |", docPath)
	}
	return rows, doc
}

// tableCells splits a Markdown table row; nil for a line that is not one.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// typeName is how the reference names the YAML type of a Go field.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			return "mapping"
		}
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.String:
			return "list of strings"
		case reflect.Struct:
			return "list of mappings"
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return "map of strings"
		}
	}
	return "unknown Go type " + t.String()
}

// TestDocsListEveryKey fails when the reference's key table and the Config
// struct disagree on the set of keys or on a key's type.
func TestDocsListEveryKey(t *testing.T) {
	rows, _ := readKeyTable(t)
	seen := map[string]bool{}
	walkKeys(reflect.TypeOf(Config{}), "", func(path string, typ reflect.Type) {
		seen[path] = true
		row, ok := rows[path]
		if !ok {
			t.Errorf("key %s (%s) is not in the key table of %s", path, typeName(typ), docPath)
			return
		}
		if want := typeName(typ); row.typ != want {
			t.Errorf("%s:%d: key %s has type %q, want %q", docPath, row.line, path, row.typ, want)
		}
	})
	for key, row := range rows {
		if !seen[key] {
			t.Errorf("%s:%d: key %s is not a configuration key (keys: %s)", docPath, row.line, key, strings.Join(KeyPaths(), ", "))
		}
	}
	if got := KeyPaths(); len(got) != len(seen) {
		t.Errorf("KeyPaths returned %d paths, the walk %d", len(got), len(seen))
	}
}

// minimal is the smallest valid configuration that reaches every required
// key: it sets the required keys, plus the optional mappings that hold
// required keys of their own (SASL, a create block with a partition field,
// the schema registries, upsert and its deleteWhen)
// and what those need to be valid.
func minimal() map[string]any {
	return map[string]any{
		"ingestion": map[string]any{"wal": map[string]any{"dir": "/var/lib/ingestor/wal"}},
		"kafka": map[string]any{
			"brokers": []any{"127.0.0.1:9092"},
			"sasl":    map[string]any{"mechanism": "OAUTHBEARER", "token": "t0k3n"},
		},
		"catalog":        map[string]any{"name": "lake", "type": "sql"},
		"schemaRegistry": map[string]any{"url": "http://registry:8081"},
		"datasets": []any{map[string]any{
			"name": "clicks", "topic": "clicks", "table": "web.clicks",
			"schemaRegistry": map[string]any{"url": "http://registry:8081"},
			"format":         "avro",
			"customMapping":  map[string]any{"event_id": "id"},
			"create": map[string]any{
				"columns":   []any{map[string]any{"name": "event_id", "type": "string"}},
				"partition": []any{map[string]any{"column": "event_id"}},
			},
			"upsert": map[string]any{
				"keyColumns": []any{"event_id"},
				"deleteWhen": map[string]any{"path": "op", "equals": []any{"d"}},
			},
		}},
	}
}

// optionalContainers are keys minimal sets only to reach the required keys
// inside them.
var optionalContainers = []string{"kafka.sasl", "datasets[].create", "datasets[].create.partition", "schemaRegistry", "datasets[].schemaRegistry", "datasets[].upsert", "datasets[].upsert.deleteWhen"}

// setKeys returns the key paths a document sets, lists written as [].
func setKeys(v any, path string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := join(path, k)
			if path == "catalog" && k != "name" {
				p = "catalog.<property>"
			}
			if path == "datasets[].customMapping" {
				continue
			}
			out[p] = true
			setKeys(e, p, out)
		}
	case []any:
		for _, e := range v {
			setKeys(e, path+"[]", out)
		}
	}
}

// without returns a copy of doc without the key at path, the first item
// of each list standing for the list.
func without(doc map[string]any, path string) map[string]any {
	var strip func(v any, parts []string) any
	strip = func(v any, parts []string) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			key, list := strings.CutSuffix(parts[0], "[]")
			for k, e := range v {
				switch {
				case k != key:
					out[k] = e
				case len(parts) == 1:
				case list:
					items := slices.Clone(e.([]any))
					items[0] = strip(items[0], parts[1:])
					out[k] = items
				default:
					out[k] = strip(e, parts[1:])
				}
			}
			return out
		}
		return v
	}
	return strip(doc, strings.Split(path, ".")).(map[string]any)
}

func parseDoc(t *testing.T, doc map[string]any) (*Config, error) {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(b)
}

// TestDocsRequiredKeys checks what the reference says about leaving a key
// out. A key documented "required" is set by the minimal configuration and
// leaving it out is an error that names it; one documented "required with
// ..." is an error too when the minimal configuration's choice needs it;
// any other key the minimal configuration sets may be left out.
func TestDocsRequiredKeys(t *testing.T) {
	rows, _ := readKeyTable(t)
	if _, err := parseDoc(t, minimal()); err != nil {
		t.Fatalf("the minimal configuration does not load: %v", err)
	}
	set := map[string]bool{}
	setKeys(minimal(), "", set)
	for key, row := range rows {
		if key == "catalog.<property>" {
			continue // catalog.type, a property, is checked below
		}
		required := row.def == "required"
		conditional := strings.HasPrefix(row.def, "required ")
		if required && !set[key] {
			t.Errorf("%s:%d: %s is documented as required, but the minimal configuration of this test does not set it", docPath, row.line, key)
			continue
		}
		if !set[key] || slices.Contains(optionalContainers, key) {
			continue
		}
		t.Run(key, func(t *testing.T) {
			_, err := parseDoc(t, without(minimal(), key))
			names := strings.ReplaceAll(key, "[]", "[0]") + ":"
			switch {
			case (required || conditional) && (err == nil || !strings.Contains(err.Error(), names)):
				t.Fatalf("%s:%d: %s is documented %q, but leaving it out gives %v", docPath, row.line, key, row.def, err)
			case !required && !conditional && err != nil:
				t.Fatalf("%s:%d: %s is documented with default %q, but leaving it out gives: %v", docPath, row.line, key, row.def, err)
			}
		})
	}
	_, err := parseDoc(t, without(minimal(), "catalog.type"))
	if err == nil || !strings.Contains(err.Error(), "catalog.type: required") {
		t.Fatalf("without catalog.type: %v", err)
	}
}

// backticked is the first `value` of a default cell.
var backticked = regexp.MustCompile("`([^`]*)`")

// TestDocsDefaults checks every documented default against the value the
// code gives a key left out, and the Default constants by name.
func TestDocsDefaults(t *testing.T) {
	rows, _ := readKeyTable(t)
	c, err := parseDoc(t, minimal())
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	setKeys(minimal(), "", set)
	dataset := c.Datasets[0].Name
	documented := func(row docRow) string {
		m := backticked.FindStringSubmatch(row.def)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "<name>", dataset)
	}
	for _, key := range KeyPaths() {
		row, ok := rows[key]
		if !ok || set[key] || key == "catalog.<property>" {
			continue // a missing row is TestDocsListEveryKey's; a set key has no default here
		}
		v := valueAt(reflect.ValueOf(c).Elem(), key)
		if !v.IsValid() || v.IsZero() {
			continue // no default in this package; the reference may describe one applied later
		}
		got := fmt.Sprint(v.Interface())
		if want := documented(row); want != got {
			t.Errorf("%s:%d: %s defaults to %q, the reference says %q (%s)", docPath, row.line, key, got, want, row.def)
		}
	}
	constants := map[string]any{
		"ingestion.commitIntervalSeconds":           DefaultCommitIntervalSeconds,
		"ingestion.drainTimeoutSeconds":             DefaultDrainTimeoutSeconds,
		"ingestion.stallTimeoutSeconds":             DefaultStallTimeoutSeconds,
		"ingestion.wal.maxFileSizeBytes":            DefaultMaxFileSizeBytes,
		"ingestion.wal.maxFileAgeMinutes":           DefaultMaxFileAgeMinutes,
		"ingestion.wal.maxOpenSegmentsPerPartition": DefaultMaxOpenSegmentsPerPartition,
		"ingestion.wal.diskHighWatermarkPct":        DefaultDiskHighWatermarkPct,
		"metrics.address":                           DefaultMetricsAddress,
		"datasets[].startOffset":                    DefaultStartOffset,
		"ingestion.maxRecordBytes":                  DefaultMaxRecordBytes,
		"ingestion.maxJSONDepth":                    DefaultMaxJSONDepth,
		"ingestion.wal.memoryBudgetBytes":           DefaultMemoryBudgetBytes,
		"maintenance.intervalSeconds":               DefaultMaintenanceIntervalSeconds,
		"maintenance.maxManifests":                  DefaultMaintenanceMaxManifests,
		"maintenance.compactionFanIn":               DefaultMaintenanceCompactionFanIn,
		"maintenance.maxSnapshots":                  DefaultMaintenanceMaxSnapshots,
		"maintenance.orphanAgeHours":                DefaultMaintenanceOrphanAgeHours,
		"maintenance.idleCompactionMinutes":         DefaultMaintenanceIdleCompactionMinutes,
		"maintenance.lease":                         DefaultMaintenanceLease,
		"maintenance.leaseSessionTimeoutSeconds":    DefaultMaintenanceLeaseSessionTimeoutSeconds,
	}
	if n := len(defaultConstants(t)); n != len(constants) {
		t.Errorf("config.go declares %d Default constants (%v), this test maps %d to their keys: add the new one",
			n, defaultConstants(t), len(constants))
	}
	for key, want := range constants {
		row, ok := rows[key]
		if !ok {
			t.Errorf("key %s is not in the reference", key)
			continue
		}
		if got := documented(row); got != fmt.Sprint(want) {
			t.Errorf("%s:%d: %s: the reference says %q, the constant is %v", docPath, row.line, key, got, want)
		}
	}
}

// defaultConstants returns the names of the Default constants declared in
// config.go.
func defaultConstants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(id.Name, "Default") {
					names = append(names, id.Name)
				}
			}
		}
	}
	return names
}

// valueAt follows a key path in a decoded Config, taking the first item
// of each list. It returns the zero Value when the path crosses a nil
// pointer or an empty list.
func valueAt(v reflect.Value, path string) reflect.Value {
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		next := reflect.Value{}
		for i := 0; i < v.NumField(); i++ {
			if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == name {
				next = v.Field(i)
			}
		}
		if !next.IsValid() {
			return reflect.Value{}
		}
		v = next
		if list {
			if v.Len() == 0 {
				return reflect.Value{}
			}
			v = v.Index(0)
		}
	}
	return v
}

// TestDocsAzureKeys fails when the storage client reads an adls.* key the
// reference does not document.
func TestDocsAzureKeys(t *testing.T) {
	_, doc := readKeyTable(t)
	src, err := os.ReadFile("../storage/azure/auth.go")
	if err != nil {
		t.Fatal(err)
	}
	keys := regexp.MustCompile(`"(adls\.[a-z0-9.-]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(keys) < 5 {
		t.Fatalf("found only %d adls.* keys in shared/storage/azure/auth.go", len(keys))
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k[1]) {
			t.Errorf("catalog property %s (read by shared/storage/azure) is not in %s", k[1], docPath)
		}
	}
	for _, k := range []string{"type", "uri", "warehouse", "sql.driver", "sql.dialect", "credential", "token"} {
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("catalog property %s has no row in %s", k, docPath)
		}
	}
}

// TestKeyPathsAreUnique guards the walk itself.
func TestKeyPathsAreUnique(t *testing.T) {
	paths := KeyPaths()
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			t.Errorf("path %s twice", p)
		}
		seen[p] = true
	}
	for _, want := range []string{"ingestion.wal.maxFileAgeMinutes", "datasets[].create.columns[].type", "catalog.name", "metrics.roles.committer"} {
		if !seen[want] {
			t.Errorf("KeyPaths lacks %s", want)
		}
	}
}
