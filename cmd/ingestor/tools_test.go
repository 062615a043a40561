package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/internal/inspect"
	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// toolEnv is a WAL directory with one ready segment of the dataset's table
// (created in an SQLite catalog), an uploaded marker, an active segment,
// and a bloom sidecar beside a data file in the warehouse.
type toolEnv struct {
	dir, walDir, config string
	ready, active       string
	dataFile            string
	// mismatched is a ready segment, outside the WAL directory, whose
	// partition values do not fit the table's spec.
	mismatched string
}

var toolUUID = uuid.MustParse("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11")

func newToolEnv(t *testing.T) toolEnv {
	t.Helper()
	dir := t.TempDir()
	e := toolEnv{dir: dir, walDir: filepath.Join(dir, "wal"), config: filepath.Join(dir, "ingestor.yaml")}
	for _, d := range []string{e.walDir, filepath.Join(dir, "warehouse", "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	doc := `
ingestion: {wal: {dir: "` + e.walDir + `"}}
kafka: {brokers: ["127.0.0.1:9092"]}
catalog:
  name: test
  type: sql
  uri: "file:` + filepath.Join(dir, "catalog.db") + `"
  sql.driver: sqlite
  sql.dialect: sqlite
  warehouse: "file://` + filepath.Join(dir, "warehouse") + `"
datasets:
  - name: clicks
    topic: clicks
    table: web.clicks
    customMapping: {event_id: id, tenant: t, ts: ts}
    bloomFilterColumns: [tenant]
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
      partition:
        - {column: tenant}
        - {column: ts, transform: day}
`
	if err := os.WriteFile(e.config, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	cat.(catalog.Closer).Close()
	if err != nil {
		t.Fatal(err)
	}

	ready := walfile.Name{State: walfile.Ready, Topic: "clicks", Partition: 1, Start: 40, End: 42, UUID: toolUUID}
	e.ready = filepath.Join(e.walDir, ready.String())
	writeToolSegment(t, e.ready, tbl, `{"1000":"acme","1001":19783}`, `[
{"event_id": "e1", "tenant": "acme", "ts": "2024-03-01T10:00:00Z"},
{"event_id": "e2", "tenant": "acme", "ts": "2024-03-01T11:00:00Z"},
{"event_id": "e3", "tenant": "acme", "ts": "2024-03-01T12:00:00Z"}]`)
	e.mismatched = filepath.Join(dir, walfile.Name{State: walfile.Ready, Topic: "clicks", Partition: 2, Start: 7, End: 7, UUID: uuid.New()}.String())
	writeToolSegment(t, e.mismatched, tbl, `{"1000":"acme"}`, `[{"event_id": "e9", "tenant": "acme", "ts": "2024-03-02T00:00:00Z"}]`)
	if err := walfile.WriteMarker(e.walDir, ready, walfile.Marker{Object: "file:///x.parquet", Size: 1}); err != nil {
		t.Fatal(err)
	}
	e.active = filepath.Join(e.walDir, walfile.Name{State: walfile.Active, Topic: "clicks", Partition: 1, UUID: uuid.New()}.String())
	if err := os.WriteFile(e.active, []byte("PAR1 half written"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Old enough that the ages printed do not change while the test runs.
	old := time.Now().Add(-50*time.Hour - 30*time.Minute)
	for _, p := range []string{e.ready, e.active, filepath.Join(e.walDir, ready.As(walfile.Uploaded).String())} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}

	e.dataFile = filepath.Join(dir, "warehouse", "data", toolUUID.String()+".parquet")
	f := bloom.New(3, bloom.DefaultFPRate)
	f.Column = "tenant"
	for _, v := range []string{"acme", "globex", "initech"} {
		f.Add([]byte(v))
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "warehouse", "data", toolUUID.String()+".bloom.tenant"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// writeToolSegment writes a segment of tbl's schema as the consumer does.
func writeToolSegment(t *testing.T, path string, tbl *table.Table, partition, rows string) {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(sc, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendKeyValueMetadata(walfile.MetaPartition, partition); err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWALCommand(t *testing.T) {
	e := newToolEnv(t)
	readySize := func() int64 {
		info, err := os.Stat(e.ready)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}()
	activeUUID := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(e.active), "active_clicks_1_"), ".parquet")
	lsTable := fmt.Sprint(fields(strings.Join([]string{
		"STATE TOPIC PARTITION START END UUID SIZE AGE",
		"active clicks 1 - - " + activeUUID + " 17 B 2d02h",
		"ready clicks 1 40 42 " + toolUUID.String() + " " + inspect.FormatBytes(readySize) + " 2d02h",
		"uploaded clicks 1 40 42 " + toolUUID.String() + " 39 B 2d02h", // {"object":"file:///x.parquet","size":1},
	}, "\n")))
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string   // the whole of stdout, when set
		wantCells  string   // the cells of stdout's table, when set
		wantOutHas []string // lines stdout must hold
		wantErr    string
	}{
		{name: "ls by dir", args: []string{"ls", "--dir", e.walDir}, wantCells: lsTable},
		{name: "ls by config", args: []string{"ls", "--config", e.config}, wantCells: lsTable},
		{name: "ls json", args: []string{"ls", "--dir", e.walDir, "--output", "json"},
			wantOutHas: []string{`"state": "uploaded"`, `"start": null`, `"end": 42`, `"size": ` + strconv.FormatInt(readySize, 10)}},
		{name: "ls both dir and config", args: []string{"ls", "--dir", e.walDir, "--config", e.config}, wantCode: 2, wantErr: "usage:"},
		{name: "ls neither", args: []string{"ls"}, wantCode: 2, wantErr: "usage:"},
		{name: "ls stray argument", args: []string{"ls", "--dir", e.walDir, "extra"}, wantCode: 2, wantErr: "usage:"},
		{name: "ls missing dir", args: []string{"ls", "--dir", filepath.Join(e.dir, "nope")}, wantCode: 1, wantErr: "list wal dir"},
		{name: "ls bad config", args: []string{"ls", "--config", filepath.Join(e.dir, "nope.yaml")}, wantCode: 2, wantErr: "invalid configuration"},
		{name: "ls bad output", args: []string{"ls", "--dir", e.walDir, "--output", "yaml"}, wantCode: 2, wantErr: `unknown output format "yaml"`},
		{name: "inspect", args: []string{"inspect", e.ready},
			wantOutHas: []string{"state:              ready", "kafka offsets:      40-42", "rows:               3", "row groups:         1",
				"  0     3", `  1000  "acme"`, "  1001  19783", "  1   event_id  utf8 required", "  3   ts        timestamp[us, tz=UTC] required"}},
		{name: "inspect with config after the file", args: []string{"inspect", e.ready, "--config", e.config},
			wantOutHas: []string{"  1000  tenant  identity(tenant)  acme", "  1001  ts_day  day(ts)           2024-03-01"}},
		{name: "inspect with config and dataset", args: []string{"inspect", "--config", e.config, "--dataset", "clicks", e.ready},
			wantOutHas: []string{"  1001  ts_day  day(ts)           2024-03-01"}},
		{name: "inspect json", args: []string{"inspect", "--output", "json", e.ready},
			wantOutHas: []string{`"rows": 3`, `"partitionRaw": "{\"1000\":\"acme\",\"1001\":19783}"`, `"start": 40`}},
		{name: "inspect spec mismatch", args: []string{"inspect", e.mismatched, "--config", e.config}, wantCode: 1,
			wantOutHas: []string{"rows:               1", `  1000  "acme"`}, wantErr: "dataset clicks: decode partition"},
		{name: "inspect unknown dataset", args: []string{"inspect", e.ready, "--config", e.config, "--dataset", "orders"}, wantCode: 1, wantErr: `no dataset "orders"`},
		{name: "inspect dataset without config", args: []string{"inspect", e.ready, "--dataset", "clicks"}, wantCode: 2, wantErr: "usage:"},
		{name: "inspect active", args: []string{"inspect", e.active}, wantCode: 1, wantErr: "an active segment has no footer until it rotates"},
		{name: "inspect no file", args: []string{"inspect"}, wantCode: 2, wantErr: "usage:"},
		{name: "inspect two files", args: []string{"inspect", e.ready, e.active}, wantCode: 2, wantErr: "usage:"},
		{name: "inspect bad output", args: []string{"inspect", e.ready, "--output", "xml"}, wantCode: 2, wantErr: `unknown output format "xml"`},
		{name: "no command", args: nil, wantCode: 2, wantErr: "ingestor wal ls"},
		{name: "unknown command", args: []string{"rm"}, wantCode: 2, wantErr: `unknown command "rm"`},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantErr: "ingestor wal inspect FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := walMain(tc.args, &stdout, &stderr)
			check(t, code, stdout.String(), stderr.String(), tc.wantCode, tc.wantOut, tc.wantOutHas, tc.wantErr)
			if got := fmt.Sprint(fields(stdout.String())); tc.wantCells != "" && got != tc.wantCells {
				t.Fatalf("table cells:\n%s\nwant:\n%s\nstdout:\n%s", got, tc.wantCells, stdout.String())
			}
		})
	}
}

func TestBloomCommand(t *testing.T) {
	e := newToolEnv(t)
	sidecar := strings.TrimSuffix(e.dataFile, ".parquet") + ".bloom.tenant"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "maybe by data file", args: []string{"test", "--file", e.dataFile, "--column", "tenant", "--value", "acme"}, wantOut: "maybe\n"},
		{name: "maybe by sidecar", args: []string{"test", "--file", sidecar, "--column", "tenant", "--value", "initech"}, wantOut: "maybe\n"},
		{name: "no", args: []string{"test", "--file", e.dataFile, "--column", "tenant", "--value", "umbrella"}, wantCode: 1, wantOut: "no\n"},
		{name: "empty value is a value", args: []string{"test", "--file", e.dataFile, "--column", "tenant", "--value", ""}, wantCode: 1, wantOut: "no\n"},
		{name: "file uri with config", args: []string{"test", "--config", e.config, "--file", "file://" + e.dataFile, "--column", "tenant", "--value", "globex"}, wantOut: "maybe\n"},
		{name: "typed value", args: []string{"test", "--file", e.dataFile, "--column", "tenant", "--type", "long", "--value", "12x"}, wantCode: 2, wantErr: `value "12x" for a long column`},
		{name: "no sidecar for column", args: []string{"test", "--file", e.dataFile, "--column", "country", "--value", "de"}, wantCode: 2, wantErr: ".bloom.country"},
		{name: "ready segment: its sidecar is not beside it", args: []string{"test", "--file", e.ready, "--column", "tenant", "--value", "acme"}, wantCode: 2, wantErr: ".bloom.tenant"},
		{name: "a file that is not a sidecar", args: []string{"test", "--file", e.config, "--column", "tenant", "--value", "acme"}, wantCode: 2, wantErr: "bad magic"},
		{name: "missing value", args: []string{"test", "--file", e.dataFile, "--column", "tenant"}, wantCode: 2, wantErr: "usage:"},
		{name: "missing column", args: []string{"test", "--file", e.dataFile, "--value", "x"}, wantCode: 2, wantErr: "usage:"},
		{name: "bad config", args: []string{"test", "--config", e.dir, "--file", e.dataFile, "--column", "tenant", "--value", "x"}, wantCode: 2, wantErr: "invalid configuration"},
		{name: "unknown flag", args: []string{"test", "--colour", "x"}, wantCode: 2, wantErr: "flag provided but not defined: -colour"},
		{name: "unknown command", args: []string{"build"}, wantCode: 2, wantErr: "usage:"},
		{name: "no command", args: nil, wantCode: 2, wantErr: "usage:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := bloomMain(tc.args, &stdout, &stderr)
			check(t, code, stdout.String(), stderr.String(), tc.wantCode, tc.wantOut, nil, tc.wantErr)
		})
	}
}

// TestToolsThroughDispatch runs the subcommands as the binary does, in a
// process of their own, for the exit codes a script sees.
func TestToolsThroughDispatch(t *testing.T) {
	e := newToolEnv(t)
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string
	}{
		{[]string{"bloom", "test", "--file", e.dataFile, "--column", "tenant", "--value", "acme"}, 0, "maybe\n"},
		{[]string{"bloom", "test", "--file", e.dataFile, "--column", "tenant", "--value", "hooli"}, 1, "no\n"},
		{[]string{"bloom", "test", "--file", e.dataFile, "--column", "nope", "--value", "hooli"}, 2, ""},
		{[]string{"wal", "ls", "--dir", e.walDir, "--output", "json"}, 0, ""},
		{[]string{"wal", "inspect", e.active}, 1, ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, tc.args...)...)
			cmd.Env = append(os.Environ(), envMain+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if tc.wantOut != "" && stdout.String() != tc.wantOut {
				t.Fatalf("stdout %q, want %q", stdout.String(), tc.wantOut)
			}
			if tc.args[0] == "wal" && tc.wantCode == 0 {
				var entries []map[string]any
				if err := json.Unmarshal(stdout.Bytes(), &entries); err != nil || len(entries) != 3 {
					t.Fatalf("wal ls json: %v, %d entries:\n%s", err, len(entries), stdout.String())
				}
			}
		})
	}
}

func check(t *testing.T, code int, stdout, stderr string, wantCode int, wantOut string, wantOutHas []string, wantErr string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, stdout, stderr)
	}
	if wantOut != "" && stdout != wantOut {
		t.Fatalf("stdout:\n%s\nwant:\n%s", stdout, wantOut)
	}
	for _, want := range wantOutHas {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if wantErr != "" && !strings.Contains(stderr, wantErr) {
		t.Errorf("stderr lacks %q:\n%s", wantErr, stderr)
	}
	if wantErr == "" && stderr != "" {
		t.Errorf("unexpected stderr:\n%s", stderr)
	}
}

// fields splits the lines of a table into their whitespace-separated cells.
func fields(table string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		out = append(out, strings.Fields(line))
	}
	return out
}
