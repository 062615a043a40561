package tableview

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// noSecrets fails when out holds a secret of the configuration.
func noSecrets(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{devenv.AzuriteKey, "tablepropsecret"} {
		if strings.Contains(out, s) {
			t.Errorf("output shows the secret %q:\n%s", s, out)
		}
	}
}

// hasLine reports whether text has a line made of cells, in order,
// separated by spaces only.
func hasLine(text string, cells ...string) bool {
	q := make([]string, len(cells))
	for i, c := range cells {
		q[i] = regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(`(?m)^\s*` + strings.Join(q, `\s+`) + `\s*$`).MatchString(text)
}

func TestDescribe(t *testing.T) {
	v := openView(t)
	d, err := v.Describe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// Field IDs as the catalog assigns them when it creates the table:
	// depth first, each nested field right after its parent.
	wantCols := []Column{
		{ID: 1, Name: "event_id", Type: "string", Required: true},
		{ID: 2, Name: "tenant", Type: "string"},
		{ID: 3, Name: "ts", Type: "timestamptz", Required: true},
		{ID: 4, Name: "user", Type: "struct<5: id: optional long, 6: agent: optional string>"},
		{ID: 5, Name: "user.id", Type: "long"},
		{ID: 6, Name: "user.agent", Type: "string"},
		{ID: 7, Name: "tags", Type: "list<string>"},
		{ID: 8, Name: "tags.element", Type: "string"},
		{ID: 9, Name: "amount", Type: "double"},
	}
	if len(d.Schema) != len(wantCols) {
		t.Fatalf("schema has %d fields, want %d: %+v", len(d.Schema), len(wantCols), d.Schema)
	}
	for i, want := range wantCols {
		got := d.Schema[i]
		if got.ID != want.ID || got.Name != want.Name || got.Required != want.Required || got.Type != want.Type {
			t.Errorf("field %d = %+v, want %+v", i, got, want)
		}
	}
	wantSpec := []PartitionField{
		{FieldID: 1000, Name: "tenant", SourceID: 2, Source: "tenant", Transform: "identity"},
		{FieldID: 1001, Name: "ts_day", SourceID: 3, Source: "ts", Transform: "day"},
	}
	if !slices.Equal(d.Partition, wantSpec) {
		t.Errorf("partition spec = %+v, want %+v", d.Partition, wantSpec)
	}
	if len(d.SortOrder) != 0 {
		t.Errorf("sort order = %+v, want unsorted", d.SortOrder)
	}
	if d.Snapshots != 2 || d.DataFiles != 3 || d.Rows != totalRows || d.Bytes <= 0 {
		t.Errorf("snapshots %d, data files %d, rows %d, bytes %d; want 2, 3, %d, > 0", d.Snapshots, d.DataFiles, d.Rows, d.Bytes, totalRows)
	}
	if d.FormatVersion != 2 || d.Properties[table.ManifestMergeEnabledKey] != "true" {
		t.Errorf("format version %d, properties %v; want 2 and the ingestor's upkeep properties", d.FormatVersion, d.Properties)
	}
	if c := d.LastCommit; c == nil || c.Operation != "append" || c.By != "ingestor (dataset clicks)" || !slices.Equal(c.Segments, []string{fixture.segments[1].String()}) {
		t.Errorf("last commit = %+v, want the second append, by the ingestor", d.LastCommit)
	}

	var text, js bytes.Buffer
	if err := WriteDescription(&text, d, FormatText); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"1000", "tenant", "tenant (id 2)", "identity"},
		{"1001", "ts_day", "ts (id 3)", "day"},
		{"5", "user.id", "long", "optional"},
		{"8", "tags.element", "string", "optional"},
		{"data files", "3"},
		{"rows", "9"},
		{"write.note", "https://example.blob.core.windows.net/c?REDACTED"},
	} {
		if !hasLine(text.String(), want...) {
			t.Errorf("text lacks a line %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(text.String(), "append by ingestor (dataset clicks)") {
		t.Errorf("text does not say who made the last commit:\n%s", text.String())
	}
	noSecrets(t, text.String())
	if err := WriteDescription(&js, d, FormatJSON); err != nil {
		t.Fatal(err)
	}
	noSecrets(t, js.String())
	var back Description
	dec := json.NewDecoder(&js)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("JSON does not decode: %v", err)
	}
	if back.Rows != totalRows || len(back.Schema) != len(wantCols) || back.Partition[1].Transform != "day" {
		t.Errorf("JSON round trip = %+v", back)
	}
}

func TestSnapshots(t *testing.T) {
	v := openView(t)
	snaps := v.Snapshots()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots, want 2: %+v", len(snaps), snaps)
	}
	want := []struct{ files, rows, total int64 }{{2, 5, 5}, {1, 4, 9}}
	for i, s := range snaps {
		if s.Operation != "append" || s.AddedFiles != want[i].files || s.AddedRows != want[i].rows || s.TotalRows != want[i].total {
			t.Errorf("snapshot %d: %s, %d files, %d rows, total %d; want append, %d, %d, %d", i, s.Operation, s.AddedFiles, s.AddedRows, s.TotalRows, want[i].files, want[i].rows, want[i].total)
		}
		if s.Dataset != "clicks" || !slices.Equal(s.Segments, []string{fixture.segments[i].String()}) || s.Summary[tables.SummaryDataset] != "clicks" {
			t.Errorf("snapshot %d: dataset %q segments %v, want clicks %v", i, s.Dataset, s.Segments, fixture.segments[i])
		}
		if s.Current != (i == 1) {
			t.Errorf("snapshot %d: current = %v", i, s.Current)
		}
	}
	if snaps[1].ParentID == nil || *snaps[1].ParentID != snaps[0].ID {
		t.Errorf("second snapshot's parent = %v, want %d", snaps[1].ParentID, snaps[0].ID)
	}

	var text, js bytes.Buffer
	if err := WriteSnapshots(&text, snaps, FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "append") || !strings.Contains(text.String(), "clicks") || strings.Count(text.String(), "ingestor (dataset clicks)") != 2 {
		t.Errorf("text:\n%s", text.String())
	}
	if err := WriteSnapshots(&js, snaps, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back []Snapshot
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 2 || back[0].Segments[0] != fixture.segments[0].String() {
		t.Errorf("JSON = %s (%v)", js.String(), err)
	}
}

func TestFiles(t *testing.T) {
	v := openView(t)
	files, err := v.Files(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	var sum int64
	for _, f := range files {
		if f.Bytes <= 0 || !strings.HasPrefix(f.Path, "abfs://warehouse@") {
			t.Errorf("file %+v: want an abfs path and a size", f)
		}
		rows[f.PartitionText(v.PartitionNames())] += f.Rows
		sum += f.Rows
	}
	if len(files) != 3 || sum != totalRows {
		t.Fatalf("%d files holding %d rows, want 3 files and %d rows: %+v", len(files), sum, totalRows, files)
	}
	want := map[string]int64{"tenant=acme/ts_day=2024-03-01": 7, "tenant=globex/ts_day=2024-03-02": 2}
	for p, n := range want {
		if rows[p] != n {
			t.Errorf("partition %s holds %d rows, want %d (all: %v)", p, rows[p], n, rows)
		}
	}

	filter, err := ParsePartition("tenant=acme,ts_day=2024-03-01")
	if err != nil {
		t.Fatal(err)
	}
	acme, err := v.Files(ctx(t), filter)
	if err != nil {
		t.Fatal(err)
	}
	if len(acme) != 2 || acme[0].Rows+acme[1].Rows != 7 {
		t.Errorf("--partition tenant=acme,ts_day=2024-03-01 gave %+v, want the 2 files of 7 rows", acme)
	}
	if _, err := v.Files(ctx(t), map[string]string{"tennant": "acme"}); err == nil || !strings.Contains(err.Error(), `no partition field "tennant"`) {
		t.Errorf("a misspelt partition field gave %v, want an error naming it", err)
	}

	var text, js bytes.Buffer
	if err := WriteFiles(&text, files, v.PartitionNames(), FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "3 files, 9 rows") || !strings.Contains(text.String(), "tenant=globex/ts_day=2024-03-02") {
		t.Errorf("text:\n%s", text.String())
	}
	noSecrets(t, text.String())
	if err := WriteFiles(&js, files, v.PartitionNames(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back []File
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 3 || back[0].Partition["tenant"] == "" {
		t.Errorf("JSON = %s (%v)", js.String(), err)
	}
}

func TestHead(t *testing.T) {
	v := openView(t)
	for _, limit := range []int64{1, 4, 100} {
		r, err := v.Head(ctx(t), limit)
		if err != nil {
			t.Fatal(err)
		}
		want := min(limit, totalRows)
		if int64(len(r.Rows)) != want {
			t.Errorf("--limit %d gave %d rows, want %d", limit, len(r.Rows), want)
		}
	}
	r, err := v.Head(ctx(t), 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Columns, []string{"event_id", "tenant", "ts", "user", "tags", "amount"}) {
		t.Fatalf("columns = %v", r.Columns)
	}
	var js bytes.Buffer
	if err := WriteRows(&js, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("JSON does not decode: %v\n%s", err, js.String())
	}
	byID := map[string]map[string]any{}
	for _, row := range got {
		byID[row["event_id"].(string)] = row
	}
	if len(byID) != totalRows {
		t.Fatalf("%d distinct rows, want %d: %s", len(byID), totalRows, js.String())
	}
	a1, g2 := byID["a1"], byID["g2"]
	if a1["tenant"] != "acme" || a1["amount"] != 1.5 || a1["user"].(map[string]any)["agent"] != "curl" || len(a1["tags"].([]any)) != 2 {
		t.Errorf("row a1 = %v", a1)
	}
	if ts, _ := a1["ts"].(string); !strings.HasPrefix(ts, "2024-03-01") || !strings.Contains(ts, "10:00:00") {
		t.Errorf("row a1 ts = %v, want 2024-03-01 10:00:00", a1["ts"])
	}
	if g2["tenant"] != "globex" || g2["user"] != nil || g2["amount"] != nil {
		t.Errorf("row g2 = %v", g2)
	}
	var text bytes.Buffer
	if err := WriteRows(&text, r, FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "9 rows") || !strings.Contains(text.String(), `{"agent":"curl","id":7}`) {
		t.Errorf("text:\n%s", text.String())
	}
}

func TestOpenUnknownDataset(t *testing.T) {
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	_, err := Open(ctx(t), fixture.cfg, "nope")
	if err == nil || !strings.Contains(err.Error(), `no dataset "nope"`) || !strings.Contains(err.Error(), "clicks") {
		t.Errorf("Open(nope) = %v, want an error naming the datasets", err)
	}
}

func TestPartitionText(t *testing.T) {
	tests := []struct {
		name string
		part map[string]string
		want string
	}{
		{"current spec", map[string]string{"ts_day": "2024-03-01", "tenant": "acme"}, "tenant=acme/ts_day=2024-03-01"},
		{"older spec with another field", map[string]string{"tenant": "acme", "ts_hour": "2024-03-01-10"}, "tenant=acme/ts_hour=2024-03-01-10"},
		{"unpartitioned", map[string]string{}, "(unpartitioned)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (File{Partition: tt.part}).PartitionText([]string{"tenant", "ts_day"}); got != tt.want {
				t.Errorf("PartitionText = %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"tenant", "=acme", ","} {
		if _, err := ParsePartition(bad); err == nil {
			t.Errorf("ParsePartition(%q) accepted it", bad)
		}
	}
	if p, err := ParsePartition("tenant=acme/ts_day=2024-03-01"); err != nil || p["ts_day"] != "2024-03-01" || len(p) != 2 {
		t.Errorf("ParsePartition of a path-style filter = %v, %v", p, err)
	}
}

// TestByNamesTheMaintainersCompaction: a compaction's replace is named as
// the maintainer's, not as an unknown engine's.
func TestByNamesTheMaintainersCompaction(t *testing.T) {
	got := by(iceberg.Properties{tables.SummaryUpkeep: tables.UpkeepCompaction, "added-data-files": "1"})
	if want := "ingestor maintainer (compaction)"; got != want {
		t.Errorf("by = %q, want %q", got, want)
	}
}
