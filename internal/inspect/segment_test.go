package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

func TestReadSegment(t *testing.T) {
	schema, _ := testSchema(t)
	path := filepath.Join(t.TempDir(), readyName().String())
	writeSegment(t, path, schema, acmeDay, batch1, batch2)
	s, err := ReadSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name == nil || *s.Name != readyName() {
		t.Fatalf("name = %+v, want %+v", s.Name, readyName())
	}
	if s.Rows != 5 || len(s.RowGroups) != 2 || s.RowGroups[0].Rows != 3 || s.RowGroups[1].Rows != 2 {
		t.Fatalf("rows %d, row groups %+v; want 5 rows in groups of 3 and 2", s.Rows, s.RowGroups)
	}
	if s.FileSize != info.Size() {
		t.Fatalf("file size %d, want %d", s.FileSize, info.Size())
	}
	// Column chunks are most of the file, but not the footer.
	if c := s.CompressedBytes(); c <= 0 || c >= s.FileSize || s.RowGroups[0].CompressedBytes <= 0 {
		t.Fatalf("compressed %d of a %d-byte file; groups %+v", c, s.FileSize, s.RowGroups)
	}
	if s.Compression != "ZSTD" {
		t.Fatalf("compression %q", s.Compression)
	}
	if !s.HasPartition || s.Partition != acmeDay {
		t.Fatalf("partition %q (%v)", s.Partition, s.HasPartition)
	}
	want := []PartitionValue{{FieldID: 1000, Raw: []byte(`"acme"`), Human: `"acme"`}, {FieldID: 1001, Raw: []byte("19783"), Human: "19783"}}
	if fmt.Sprint(s.Values) != fmt.Sprint(want) {
		t.Fatalf("values %+v, want %+v", s.Values, want)
	}
	// Every field, nested ones included, carries its Iceberg field ID.
	var ids []string
	var walk func(fields []schemaField)
	walk = func(fields []schemaField) {
		for _, f := range fields {
			ids = append(ids, fmt.Sprintf("%s=%d", f.Name, *f.FieldID))
			walk(f.Fields)
		}
	}
	for _, f := range s.Schema.Fields() {
		walk([]schemaField{jsonField(f)})
	}
	var wantIDs []string
	for _, f := range []string{"event_id=1", "tenant=2", "ts=3", "user=4", "id=6", "agent=7", "tags=5", "element=8"} {
		wantIDs = append(wantIDs, f)
	}
	if strings.Join(ids, " ") != strings.Join(wantIDs, " ") {
		t.Fatalf("field ids %v, want %v", ids, wantIDs)
	}
}

func TestWriteSegmentText(t *testing.T) {
	schema, _ := testSchema(t)
	dir := t.TempDir()
	path := filepath.Join(dir, readyName().String())
	writeSegment(t, path, schema, acmeDay, batch1, batch2)
	s, err := ReadSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSegment(&out, s, FormatTable); err != nil {
		t.Fatal(err)
	}
	rg := s.RowGroups
	pad := func(v int64, w int) string { return fmt.Sprintf("%*d", w, v) }
	cw := max(len("COMPRESSED"), len(fmt.Sprint(rg[0].CompressedBytes)), len(fmt.Sprint(rg[1].CompressedBytes)))
	uw := max(len("UNCOMPRESSED"), len(fmt.Sprint(rg[0].UncompressedBytes)), len(fmt.Sprint(rg[1].UncompressedBytes)))
	want := strings.Join([]string{
		"file:               " + path,
		"state:              ready",
		"topic:              web_clicks",
		"kafka partition:    3",
		"kafka offsets:      100-104",
		"uuid:               0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11",
		"rows:               5",
		fmt.Sprintf("file size:          %d bytes (%s)", s.FileSize, FormatBytes(s.FileSize)),
		fmt.Sprintf("compressed size:    %d bytes (%s), ZSTD", s.CompressedBytes(), FormatBytes(s.CompressedBytes())),
		fmt.Sprintf("uncompressed size:  %d bytes (%s)", s.UncompressedBytes(), FormatBytes(s.UncompressedBytes())),
		"created by:         " + s.CreatedBy,
		"row groups:         2",
		"  #  ROWS  " + fmt.Sprintf("%*s  %*s", cw, "COMPRESSED", uw, "UNCOMPRESSED"),
		"  0     3  " + pad(rg[0].CompressedBytes, cw) + "  " + pad(rg[0].UncompressedBytes, uw),
		"  1     2  " + pad(rg[1].CompressedBytes, cw) + "  " + pad(rg[1].UncompressedBytes, uw),
		`partition values (ingestor.partition = {"1000":"acme","1001":19783}):`,
		`  1000  "acme"`,
		`  1001  19783`,
		"schema (5 columns):",
		"  ID  NAME       TYPE",
		"  1   event_id   utf8 required",
		"  2   tenant     utf8 optional",
		"  3   ts         timestamp[us, tz=UTC] required",
		"  4   user       struct optional",
		"  6     id       int64 optional",
		"  7     agent    utf8 optional",
		"  5   tags       list optional",
		"  8     element  utf8 optional",
		"",
	}, "\n")
	if got := out.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(s.CreatedBy, "parquet-go") {
		t.Fatalf("created by %q", s.CreatedBy)
	}
}

// trimLines drops the trailing spaces tabwriter leaves.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func TestWriteSegmentJSON(t *testing.T) {
	schema, _ := testSchema(t)
	path := filepath.Join(t.TempDir(), readyName().String())
	writeSegment(t, path, schema, acmeDay, batch1)
	s, err := ReadSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSegment(&out, s, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var got struct {
		File            string
		State           string
		Topic           string
		Partition       int32
		Start, End      int64
		UUID            string
		Rows            int64
		CompressedBytes int64
		RowGroups       []RowGroup
		PartitionRaw    *string
		PartitionValues []PartitionValue
		Schema          []schemaField
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in:\n%s", err, out.String())
	}
	if got.File != path || got.State != "ready" || got.Topic != "web_clicks" || got.Partition != 3 ||
		got.Start != 100 || got.End != 104 || got.UUID != testUUID.String() || got.Rows != 3 ||
		len(got.RowGroups) != 1 || got.RowGroups[0].Rows != 3 || got.CompressedBytes != s.CompressedBytes() {
		t.Fatalf("got %+v from:\n%s", got, out.String())
	}
	if got.PartitionRaw == nil || *got.PartitionRaw != acmeDay || len(got.PartitionValues) != 2 ||
		string(got.PartitionValues[1].Raw) != "19783" {
		t.Fatalf("partition %v %+v", got.PartitionRaw, got.PartitionValues)
	}
	if len(got.Schema) != 5 || got.Schema[3].Name != "user" || *got.Schema[3].FieldID != 4 ||
		len(got.Schema[3].Fields) != 2 || *got.Schema[3].Fields[1].FieldID != 7 || !got.Schema[0].Required {
		t.Fatalf("schema %+v", got.Schema)
	}
}

// TestDecodeWithSpec decodes the footer with the spec of a real table in an
// SQLite catalog, as `wal inspect --config` does.
func TestDecodeWithSpec(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	createTable(t, cfg)
	schema, _ := testSchema(t)
	path := filepath.Join(dir, readyName().String())
	writeSegment(t, path, schema, acmeDay, batch1)

	s, err := ReadSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DatasetFor(cfg, s, "")
	if err != nil || d.Name != "clicks" {
		t.Fatalf("dataset %+v, %v", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec, tschema, err := TableSpec(ctx, cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DecodeWithSpec(spec, tschema); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSegment(&out, s, FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  1000  tenant  identity(tenant)  acme\n",
		"  1001  ts_day  day(ts)           2024-03-01\n",
	} {
		if !strings.Contains(trimLines(out.String()), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	tests := []struct {
		name      string
		partition string
		want      string
	}{
		{"field of another spec", `{"1000":"acme","1002":5}`, "no value for field 1001"},
		{"wrong type", `{"1000":"acme","1001":"monday"}`, "want an integer"},
		{"no footer key", "", "has no ingestor.partition footer key, and the table has 2 partition fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), readyName().String())
			writeSegment(t, p, schema, tc.partition, batch1)
			s, err := ReadSegment(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DecodeWithSpec(spec, tschema); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeWithSpec error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDatasetFor(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	other := walfile.Name{State: walfile.Ready, Topic: "orders", Partition: 0, Start: 1, End: 2, UUID: testUUID}
	tests := []struct {
		name    string
		seg     *Segment
		dataset string
		want    string
	}{
		{"by topic", &Segment{Name: ptr(readyName())}, "", "clicks"},
		{"by name", &Segment{Path: "/x/abc.parquet"}, "clicks", "clicks"},
		{"unknown topic", &Segment{Name: &other}, "", `error: no dataset reads topic "orders"`},
		{"not a wal name", &Segment{Path: "/x/abc.parquet"}, "", "error: /x/abc.parquet is not a WAL file name"},
		{"unknown dataset", &Segment{Name: ptr(readyName())}, "orders", `error: no dataset "orders"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DatasetFor(cfg, tc.seg, tc.dataset)
			got := d.Name
			if err != nil {
				got = "error: " + err.Error()
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestTableSpecMissingTable(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := TableSpec(ctx, cfg, cfg.Datasets[0])
	if err == nil || !strings.Contains(err.Error(), "load table web.clicks of dataset clicks") {
		t.Fatalf("TableSpec of a missing table: %v", err)
	}
	// Unlike the roles, inspecting never creates the table.
	cat := createTableCheck(t, cfg)
	if cat {
		t.Fatal("TableSpec created the table")
	}
}

// createTableCheck reports whether the dataset's table exists.
func createTableCheck(t *testing.T, cfg *config.Config) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	ok, err := cat.CheckTableExists(ctx, table.Identifier(cfg.Datasets[0].TableIdent()))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestReadSegmentErrors(t *testing.T) {
	schema, _ := testSchema(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writeSegment(t, good, schema, acmeDay, batch1)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	active := walfile.Name{State: walfile.Active, Topic: "web_clicks", Partition: 3, UUID: testUUID}.String()
	tests := []struct {
		name string
		file string
		data []byte
		want string
	}{
		{"active segment without footer", active, data[:len(data)/2], "an active segment has no footer until it rotates"},
		{"truncated ready segment", readyName().String(), data[:len(data)-10], "read parquet footer of " + readyName().String()},
		{"not parquet", "x.parquet", []byte("not a parquet file at all"), "read parquet footer of x.parquet"},
		{"bad partition json", "bad.parquet", nil, `decode partition "{not json"`},
		{"missing", "missing.parquet", nil, "open segment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.file)
			switch {
			case tc.name == "bad partition json":
				writeSegment(t, p, schema, "{not json", batch1)
			case tc.data != nil:
				if err := os.WriteFile(p, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadSegment(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadSegment error %v, want %q", err, tc.want)
			}
		})
	}
}
