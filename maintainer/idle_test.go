package maintainer

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// tenantConfig is a dataset partitioned by tenant (identity).
func tenantConfig(dir string, cat config.Catalog) *config.Config {
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:1"]}
catalog: %s
datasets:
  - name: events
    topic: events
    table: up.events
    customMapping: {id: id, tenant: tenant}
    create:
      columns: [{name: id, type: long, required: true}, {name: tenant, type: string, required: true}]
      partition: [{column: tenant, transform: identity}]
`, dir, catalogYAML(cat))))
	if err != nil {
		panic(err)
	}
	return cfg
}

// appendTenant makes one append of one file of tenant holding ids, and
// returns its commit time.
func appendTenant(t *testing.T, cfg *config.Config, tenant string, ids ...int64) time.Time {
	t.Helper()
	next := appendFile(t, cfg, []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tenant", Type: arrow.BinaryTypes.String},
	}, len(ids), func(b *array.RecordBuilder, i int) {
		b.Field(0).(*array.Int64Builder).Append(ids[i])
		b.Field(1).(*array.StringBuilder).Append(tenant)
	})
	return time.UnixMilli(next.CurrentSnapshot().TimestampMs)
}

// tenantFiles is the live data files of each tenant, by base name.
func tenantFiles(t *testing.T, cfg *config.Config) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range liveFiles(t, loadTable(t, cfg)) {
		var tenant string
		for _, v := range f.Partition() {
			tenant = fmt.Sprint(v)
		}
		out[tenant] = append(out[tenant], path.Base(f.FilePath()))
	}
	for _, fs := range out {
		slices.Sort(fs)
	}
	return out
}

// A tenant that stops sending keeps its three small files, below the
// fan-in of 8, only until it has been idle for
// maintenance.idleCompactionMinutes: then one pass merges them into one
// file. A tenant that received a file since is left alone, and the idle
// merge's file, the partition's only small file, is not merged again.
// When the quiet tenant sends two more files and goes quiet again, they
// are merged without the first idle merge's file, which that merge would
// not lift a size level: no byte has two idle merges.
func TestIdlePartitionIsCompacted(t *testing.T) {
	dir := t.TempDir()
	cfg := tenantConfig(dir, sqliteCatalog(t, dir))
	cfg.Maintenance.CompactionFanIn = 8
	cfg.Maintenance.IdleCompactionMinutes = 15
	idle := cfg.IdleCompaction()
	var want []int64
	var quietLast time.Time
	for i := range int64(3) {
		quietLast = appendTenant(t, cfg, "quiet", 10*i, 10*i+1)
		want = append(want, 10*i, 10*i+1)
	}
	var busyLast time.Time
	for i := range int64(3) {
		busyLast = appendTenant(t, cfg, "busy", 100+i)
		want = append(want, 100+i)
	}
	m, _ := newMaintainer(t, cfg)
	ctx := context.Background()
	before := tenantFiles(t, cfg)

	// A minute short of idle: nothing.
	m.now = func() time.Time { return quietLast.Add(idle - time.Minute) }
	m.pass(ctx)
	if notes, _, _ := walfile.ListHandoffs(m.dir, "events"); len(notes) != 0 {
		t.Fatalf("%d hand-offs before the tenant was idle, want none", len(notes))
	}

	// The quiet tenant idle, the busy one not: its last file is younger
	// than the idle time.
	m.now = func() time.Time { return quietLast.Add(idle) }
	if m.now().Sub(busyLast) >= idle {
		t.Fatalf("the busy tenant's last file (%v) is idle at %v", busyLast, m.now())
	}
	if res := passAndCommit(t, m, cfg); res.Applied != 1 {
		t.Fatalf("hand-off result %+v, want one group applied", res)
	}
	after := tenantFiles(t, cfg)
	if q := after["quiet"]; len(q) != 1 || !strings.HasPrefix(q[0], IdleCompactedPrefix) {
		t.Errorf("the idle tenant's files %v, want one file of an idle merge", q)
	}
	if !slices.Equal(after["busy"], before["busy"]) {
		t.Errorf("the busy tenant's files %v, want them untouched: %v", after["busy"], before["busy"])
	}
	slices.Sort(want)
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}

	// Much later, everything idle: the busy tenant's three files merge,
	// the quiet tenant's one idle output stays as it is.
	m.now = func() time.Time { return busyLast.Add(24 * time.Hour) }
	passAndCommit(t, m, cfg)
	later := tenantFiles(t, cfg)
	if !slices.Equal(later["quiet"], after["quiet"]) {
		t.Errorf("the idle merge's file was merged again: %v, was %v", later["quiet"], after["quiet"])
	}
	if b := later["busy"]; len(b) != 1 || !strings.HasPrefix(b[0], IdleCompactedPrefix) {
		t.Errorf("the busy tenant's files once idle %v, want one file of an idle merge", b)
	}

	// Two more files of the quiet tenant, then quiet again: they merge,
	// and the first idle output does not go along: with the target set
	// to twice the three files' size, the three together would be of its
	// level, so the merge would not lift it.
	var last time.Time
	for i := range int64(2) {
		last = appendTenant(t, cfg, "quiet", 50+i)
		want = append(want, 50+i)
	}
	var first, sum int64
	quiet := tenantFiles(t, cfg)["quiet"]
	if len(quiet) != 3 {
		t.Fatalf("the quiet tenant's files %v, want the idle output and two new", quiet)
	}
	for _, f := range liveFiles(t, loadTable(t, cfg)) {
		if !slices.Contains(quiet, path.Base(f.FilePath())) {
			continue
		}
		sum += f.FileSizeBytes()
		if path.Base(f.FilePath()) == after["quiet"][0] {
			first = f.FileSizeBytes()
		}
	}
	target := 2*sum + 2
	setTarget(t, cfg, target)
	if a, b := level(first, target, 8), level(sum, target, 8); a != b {
		t.Fatalf("levels %d and %d: the target does not make the case", a, b)
	}
	m.now = func() time.Time { return last.Add(idle) }
	passAndCommit(t, m, cfg)
	again := tenantFiles(t, cfg)["quiet"]
	if len(again) != 2 || !slices.Contains(again, after["quiet"][0]) {
		t.Errorf("the quiet tenant's files after its second idle spell %v, want the first idle output %s and one new", again, after["quiet"][0])
	}
	slices.Sort(want)
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

// setTarget sets the table's write.target-file-size-bytes.
func setTarget(t *testing.T, cfg *config.Config, target int64) {
	t.Helper()
	tx := openTable(t, cfg).NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: fmt.Sprint(target)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}
