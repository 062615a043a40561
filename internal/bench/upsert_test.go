package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// upsertRow is one row of the bench's upsert table: a version of a key.
type upsertRow struct {
	key, version int64
}

// upsertFixture is a table of an upsert run, created from the bench's own
// configuration, and the ledger of the events it should show.
type upsertFixture struct {
	t      *testing.T
	cat    catalog.Catalog
	tbl    *table.Table
	ledger *lwwLedger
	ten    *devenv.Tenancy
	events int64
}

const upsertRun = 9

// newUpsertFixture creates the table the bench configures for --upserts
// (key event_id, partitioned by its buckets) in a SQLite catalog with a
// file:// warehouse, and a ledger of events produced to one Kafka
// partition in seq order.
func newUpsertFixture(t *testing.T, events int64) *upsertFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	props := map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"),
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse": "file://" + filepath.Join(dir, "wh"),
	}
	plan, err := devenv.NewUpserts(0.3, true)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Upserts = 0.3
	y := configYAML(setup{walDir: dir, broker: "127.0.0.1:9092", catalog: props,
		metrics: [5]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"},
		shape:   devenv.UpsertShape(devenv.NarrowShape(), plan), opts: o, drainSec: 120})
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	})
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	ten, err := devenv.NewTenancy(devenv.KeysUniform, 4)
	if err != nil {
		t.Fatal(err)
	}
	l := newLWWLedger(plan)
	for seq := range events {
		l.acked(seq, 0, 1000+seq)
	}
	return &upsertFixture{t: t, cat: cat, tbl: tbl, ledger: l, ten: ten, events: events}
}

// lastVersions returns, per key the events [from, to) touch, its last
// version among them, and whether that version deletes it.
func (f *upsertFixture) lastVersions(from, to int64) (keys []int64, last map[int64]upsertRow, deleted map[int64]bool) {
	last, deleted = map[int64]upsertRow{}, map[int64]bool{}
	for seq := from; seq < to; seq++ {
		key, op, _ := f.ledger.plan.Plan(seq)
		if _, ok := last[key]; !ok {
			keys = append(keys, key)
		}
		last[key] = upsertRow{key: key, version: seq}
		deleted[key] = op == devenv.OpDelete
	}
	return keys, last, deleted
}

// rows returns the Arrow record of rows, of the table's required columns.
func (f *upsertFixture) rows(rows []upsertRow) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error]) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: devenv.ColumnID, Type: arrow.BinaryTypes.String},
		{Name: devenv.ColumnTenant, Type: arrow.BinaryTypes.String},
		{Name: devenv.ColumnTS, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: devenv.ColumnVersion, Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	at := arrow.Timestamp(time.Now().UnixMicro())
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(devenv.EventID(upsertRun, r.key))
		b.Field(1).(*array.StringBuilder).Append(f.ten.Name(f.ten.Of(r.key)))
		b.Field(2).(*array.TimestampBuilder).Append(at)
		b.Field(3).(*array.Int64Builder).Append(r.version)
	}
	rec := b.NewRecordBatch()
	return sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
}

// commit writes rows and, when deleteKeys are given, an equality-delete
// file of them on the key, in one row-delta snapshot: the keys' rows of
// older snapshots go, the new rows stay (an equality delete applies only
// to older data).
func (f *upsertFixture) commit(rows []upsertRow, deleteKeys []int64) {
	f.t.Helper()
	ctx := context.Background()
	tx := f.tbl.NewTransaction()
	rd := tx.NewRowDelta(tables.SnapshotProperties(dataset, nil))
	if len(rows) > 0 {
		sc, recs := f.rows(rows)
		for df, err := range table.WriteRecords(ctx, f.tbl, sc, recs) {
			if err != nil {
				f.t.Fatal(err)
			}
			rd.AddRows(df)
		}
	}
	if len(deleteKeys) > 0 {
		field, ok := f.tbl.Schema().FindFieldByName(devenv.ColumnID)
		if !ok {
			f.t.Fatal("no event_id")
		}
		sc := arrow.NewSchema([]arrow.Field{{Name: devenv.ColumnID, Type: arrow.BinaryTypes.String}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for _, k := range deleteKeys {
			b.Field(0).(*array.StringBuilder).Append(devenv.EventID(upsertRun, k))
		}
		rec := b.NewRecordBatch()
		b.Release()
		eq, err := tx.WriteEqualityDeletes(ctx, []int{field.ID}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
		if err != nil {
			f.t.Fatal(err)
		}
		rd.AddDeletes(eq...)
	}
	if err := rd.Commit(ctx); err != nil {
		f.t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	f.tbl = tbl
}

// writeLWW commits the last-write-wins state of the events in two row
// deltas, as a committer would: the first half's last versions, then the
// second half's, whose equality deletes remove the first half's rows of
// the keys it touches. It returns the rows the two added.
func (f *upsertFixture) writeLWW() (n int64) {
	half := f.events / 2
	for _, span := range [][2]int64{{0, half}, {half, f.events}} {
		keys, last, deleted := f.lastVersions(span[0], span[1])
		var rows []upsertRow
		for _, k := range keys {
			if !deleted[k] {
				rows = append(rows, last[k])
			}
		}
		f.commit(rows, keys)
		n += int64(len(rows))
	}
	return n
}

func (f *upsertFixture) score() *upsertScore {
	f.t.Helper()
	s, err := scoreUpserts(context.Background(), f.tbl, upsertRun, f.ledger, f.ten)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// The scorer reads a table of upserts with its equality deletes applied
// and passes it when it is the last-write-wins state of what was
// produced; a stale version, a key shown twice, a deleted key shown
// again, or a live key gone each fail it, counted as such.
func TestScoreUpserts(t *testing.T) {
	const events = 400
	good := newUpsertFixture(t, events)
	written := good.writeLWW()
	s := good.score()
	// The bench waits for the records its commits added, which the
	// deletes do not take back.
	if got := committedRecords(good.tbl); got != written || written <= s.rows {
		t.Errorf("the commits added %d records by their summaries, want %d (more than the %d live)", got, written, s.rows)
	}
	live := good.ledger.liveKeys()
	if !s.ok() || s.expected != live || s.found != live || s.rows != live {
		t.Fatalf("last-write-wins table: ok %t, expected %d found %d in %d rows (live %d); missing %d extra %d duplicated %d stale %d wrong tenant %d",
			s.ok(), s.expected, s.found, s.rows, live, s.missing, s.extra, s.duplicated, s.stale, s.wrongTenant)
	}
	if s.eqDeleteFiles == 0 || s.posDeleteFiles != 0 {
		t.Errorf("%d equality- and %d position-delete files, want some and none", s.eqDeleteFiles, s.posDeleteFiles)
	}
	r := s.result(good.ledger)
	if r.Inserts+r.Updates+r.Deletes != events || r.Updates == 0 || r.Deletes == 0 || r.Tombstones == 0 || !r.LastWriteWins {
		t.Errorf("result %+v", r)
	}

	// Keys to break: one updated live key, and one whose last event
	// deletes it.
	keys, last, deleted := good.lastVersions(0, events)
	var updated, gone int64 = -1, -1
	for _, k := range keys {
		switch {
		case deleted[k] && gone < 0:
			gone = k
		case !deleted[k] && last[k].version != k && updated < 0:
			updated = k
		}
	}
	if updated < 0 || gone < 0 {
		t.Fatalf("no updated key (%d) or deleted key (%d) among %d events", updated, gone, events)
	}
	var older int64 // an earlier version of the updated key
	for seq := range last[updated].version {
		if k, op, _ := good.ledger.plan.Plan(seq); k == updated && op != devenv.OpDelete {
			older = seq
		}
	}
	cases := []struct {
		name    string
		breakIt func(f *upsertFixture)
		count   func(s *upsertScore) int64
	}{
		{"stale version", func(f *upsertFixture) {
			f.commit([]upsertRow{{updated, older}}, []int64{updated})
		}, func(s *upsertScore) int64 { return s.stale }},
		{"duplicate", func(f *upsertFixture) {
			f.commit([]upsertRow{last[updated]}, nil)
		}, func(s *upsertScore) int64 { return s.duplicated }},
		{"resurrected delete", func(f *upsertFixture) {
			f.commit([]upsertRow{{gone, gone}}, nil)
		}, func(s *upsertScore) int64 { return s.extra }},
		{"missing", func(f *upsertFixture) {
			f.commit(nil, []int64{updated})
		}, func(s *upsertScore) int64 { return s.missing }},
		{"row of another run", func(f *upsertFixture) {
			f.commit([]upsertRow{{events + 5, events + 5}}, nil)
		}, func(s *upsertScore) int64 { return s.extra }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newUpsertFixture(t, events)
			f.writeLWW()
			c.breakIt(f)
			s := f.score()
			if s.ok() || c.count(s) != 1 {
				t.Errorf("ok %t, count %d, want false and 1 (missing %d extra %d duplicated %d stale %d)",
					s.ok(), c.count(s), s.missing, s.extra, s.duplicated, s.stale)
			}
		})
	}
}

// The ledger orders a key's versions by Kafka offset, not by the order
// the acknowledgements arrive in, and tells versions Kafka reordered and
// keys split over two partitions.
func TestLWWLedger(t *testing.T) {
	plan, _ := devenv.NewUpserts(0.3, false)
	var seqs []int64 // two events of one key: its insert and an update
	for seq := int64(1); len(seqs) < 2 && seq < 10_000; seq++ {
		if k, op, _ := plan.Plan(seq); op == devenv.OpUpdate && (len(seqs) == 0 || k == seqs[0]) {
			if len(seqs) == 0 {
				seqs = append(seqs, k)
			}
			seqs = append(seqs, seq)
		}
	}
	if len(seqs) < 2 {
		t.Fatal("no key with an update")
	}
	key := seqs[0]
	l := newLWWLedger(plan)
	l.acked(seqs[1], 2, 50) // the update acknowledged first
	l.acked(key, 2, 10)     // then the insert, at an earlier offset
	if got := l.keys[key]; got.seq != seqs[1] || got.deleted || l.reordered != 0 {
		t.Fatalf("key %d: last version %d, want %d; reordered %d", key, got.seq, seqs[1], l.reordered)
	}
	if l.liveKeys() != 1 || l.inserts != 1 || l.updates != 1 {
		t.Errorf("live %d, inserts %d, updates %d", l.liveKeys(), l.inserts, l.updates)
	}
	// An earlier event at a later offset: Kafka's order wins.
	l.acked(key, 2, 60)
	if got := l.keys[key]; got.seq != key || l.reordered != 1 {
		t.Errorf("last version %d, reordered %d; want %d and 1", got.seq, l.reordered, key)
	}
	l.acked(seqs[1], 3, 70)
	if l.split != 1 {
		t.Errorf("split %d, want 1", l.split)
	}
	if l.keys[key].seq != key {
		t.Errorf("a version in another partition replaced the last one")
	}
}

// The configuration of an upsert run keys the dataset by the event id,
// marks deletes by op, and partitions the table by the key's buckets
// only, as an upsert dataset must be; in every format.
func TestConfigYAMLUpserts(t *testing.T) {
	plan, _ := devenv.NewUpserts(0.3, false)
	sh := devenv.UpsertShape(devenv.NarrowShape(), plan)
	o := DefaultOptions()
	o.Upserts = 0.3
	for _, format := range []string{config.FormatJSON, config.FormatAvro, config.FormatProtobuf} {
		registry := ""
		if format != config.FormatJSON {
			registry = "http://127.0.0.1:8081"
		}
		y := configYAML(setup{walDir: t.TempDir(), broker: "127.0.0.1:9092",
			catalog: map[string]string{"type": "sql", "uri": "file:/tmp/x.db", "sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": "file:///tmp/wh"},
			metrics: [5]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}, shape: sh, opts: o, drainSec: 120,
			format: format, registry: registry})
		cfg, err := config.Parse([]byte(y))
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, y)
		}
		ds := cfg.Datasets[0]
		u := ds.Upsert
		if u == nil || len(u.KeyColumns) != 1 || u.KeyColumns[0] != devenv.ColumnID || u.DeleteWhen == nil ||
			u.DeleteWhen.Path != devenv.ColumnOp || len(u.DeleteWhen.Equals) != 1 || u.DeleteWhen.Equals[0] != devenv.OpDelete {
			t.Fatalf("%s: upsert %+v", format, u)
		}
		if p := ds.Create.Partition; len(p) != 1 || p[0].Column != devenv.ColumnID || p[0].Transform != "bucket[16]" {
			t.Errorf("%s: partition %+v, want the event id's 16 buckets", format, p)
		}
		if n := len(ds.Create.Columns); n != 17 || ds.Create.Columns[16].Name != devenv.ColumnVersion {
			t.Errorf("%s: %d columns, want the narrow 15 with op and version", format, n)
		}
	}
}

// A soak's health counts the delete files of an upsert table by partition
// and the rows they hold, and its full scan returns the live rows, the
// deletes applied.
func TestHealthCountsDeletes(t *testing.T) {
	f := newUpsertFixture(t, 400)
	f.writeLWW()
	none := func(context.Context, string) ([]object, error) { return nil, nil }
	h, err := tableHealth(context.Background(), f.tbl, none, tenantHour{tenant: "tenant-000", hour: time.Now().UTC().Truncate(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	s := f.score()
	if h.DeleteFiles == 0 || h.EqualityDeleteFiles != s.eqDeleteFiles || h.PositionDeleteFiles != 0 || h.DeleteFiles != h.EqualityDeleteFiles {
		t.Errorf("%d delete files (%d equality, %d position), the scorer counts %d equality", h.DeleteFiles, h.EqualityDeleteFiles, h.PositionDeleteFiles, s.eqDeleteFiles)
	}
	// Two row deltas, each with at most one equality-delete file per
	// bucket of the key.
	if h.DeleteFilesMaxPerPartition < 1 || h.DeleteFilesMaxPerPartition > 2 || h.DeleteFilesPerPartition < 1 || h.DeleteFilesPerPartition > 2 {
		t.Errorf("%.1f delete files per partition, max %d; want 1 to 2", h.DeleteFilesPerPartition, h.DeleteFilesMaxPerPartition)
	}
	keys, _, _ := f.lastVersions(0, 200)
	more, _, _ := f.lastVersions(200, 400)
	if h.DeleteRows != int64(len(keys)+len(more)) {
		t.Errorf("delete files hold %d rows, want the %d keys the two deltas touched", h.DeleteRows, len(keys)+len(more))
	}
	rows, _, err := fullScan(context.Background(), f.tbl)
	if err != nil {
		t.Fatal(err)
	}
	if rows != f.ledger.liveKeys() {
		t.Errorf("full scan read %d rows, want the %d live keys", rows, f.ledger.liveKeys())
	}
}

// TestBenchUpsertsSmoke runs `ingestor bench --upserts 0.3` small in each
// value format, through the built binary and the whole record path: the
// table it leaves must be the last-write-wins state of what was produced,
// deletes by op and by tombstone included.
func TestBenchUpsertsSmoke(t *testing.T) {
	bin := ingestorBinary(t)
	// The row key is the Kafka key: another key is refused before
	// anything starts.
	if err := exec.Command(bin, "bench", "--upserts", "0.3", "--kafka-key", "tenant").Run(); err == nil {
		t.Error("--upserts with --kafka-key tenant was accepted")
	}
	const events = 20_000
	for _, format := range []string{config.FormatJSON, config.FormatAvro, config.FormatProtobuf} {
		t.Run(format, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(bin, "bench", "--upserts", "0.3", "--format", format,
				"--events", strconv.Itoa(events), "--tenants", "16",
				"--max-file-age-minutes", "0.05", "--commit-interval-seconds", "1",
				"--out", out, "--timeout", "3m")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				log, _ := os.ReadFile(filepath.Join(out, "ingestor.log"))
				if len(log) > 8000 {
					log = log[len(log)-8000:]
				}
				t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s\ningestor log (tail):\n%s", err, &stdout, &stderr, log)
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var r Result
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				t.Fatal(err)
			}
			u := r.Upserts
			if u == nil || !u.LastWriteWins || !r.ExactlyOnce {
				t.Fatalf("not the last-write-wins state: %+v", u)
			}
			if u.Inserts+u.Updates+u.Deletes != events || u.Updates == 0 || u.Deletes == 0 || u.Tombstones == 0 || u.Tombstones == u.Deletes {
				t.Errorf("produced %d inserts, %d updates, %d deletes (%d tombstones) of %d events", u.Inserts, u.Updates, u.Deletes, u.Tombstones, events)
			}
			if u.LiveKeysExpected == 0 || u.LiveKeysFound != u.LiveKeysExpected || u.LiveRows != u.LiveKeysExpected || u.LiveKeysExpected >= u.Inserts {
				t.Errorf("live keys expected %d, found %d in %d rows, of %d inserted", u.LiveKeysExpected, u.LiveKeysFound, u.LiveRows, u.Inserts)
			}
			if r.KafkaKey != KeyEvent || r.RowsPerCPUSec <= 0 || r.Events != events {
				t.Errorf("keyed by %s, %v rows per CPU-second, %d events", r.KafkaKey, r.RowsPerCPUSec, r.Events)
			}
			if !strings.Contains(stderr.String(), "rows per CPU-second; upserts:") {
				t.Errorf("no summary line on stderr:\n%s", &stderr)
			}
		})
	}
}

// A soak sets its upsert table's full scan beside that of the same live
// rows written append-only: the baseline holds exactly the rows the
// upsert table shows with its deletes applied, one file per partition,
// and is dropped afterwards.
func TestAppendOnlyScan(t *testing.T) {
	f := newUpsertFixture(t, 400)
	f.writeLWW()
	live := f.ledger.liveKeys()
	ctx := context.Background()
	a, err := appendOnlyScan(ctx, f.cat, f.tbl)
	if err != nil {
		t.Fatal(err)
	}
	if a.Rows != live {
		t.Errorf("the append-only table holds %d rows, want the %d live keys", a.Rows, live)
	}
	parts := map[string]bool{}
	tasks, err := f.tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		parts[partitionKey(task.File.Partition())] = true
	}
	if a.DataFiles != len(parts) {
		t.Errorf("%d files in the append-only table, want one per partition (%d)", a.DataFiles, len(parts))
	}
	if a.UpsertScanMs <= 0 || a.ScanMs <= 0 || a.Ratio <= 0 {
		t.Errorf("scans %v ms and %v ms, ratio %v", a.UpsertScanMs, a.ScanMs, a.Ratio)
	}
	ident := append(table.Identifier{}, f.tbl.Identifier()...)
	ident[len(ident)-1] += "_append_only"
	if ok, err := f.cat.CheckTableExists(ctx, ident); err != nil || ok {
		t.Errorf("the append-only table is left behind (%v, %v)", ok, err)
	}
}

// A soak of upserts ends as issue 27 measures it: the last-write-wins
// state, upkeep caught up with no delete file left to apply, and the full
// scan beside that of the same live rows written append-only.
func TestBenchUpsertSoakSmoke(t *testing.T) {
	bin := ingestorBinary(t)
	out := t.TempDir()
	// On file storage, as the long upsert soaks run (docs/benchmarks.md);
	// TestBenchSoakSmoke covers a soak on Azurite.
	r := runBench(t, bin, "--soak-commits", "10", "--soak-checkpoints", "1", "--upserts", "0.3",
		"--maintenance=true", "--storage", "file", "--out", out, "--timeout", "5m")
	if r.Storage != StorageFile {
		t.Errorf("storage %q, want %q", r.Storage, StorageFile)
	}
	if _, err := os.Stat(filepath.Join(out, "azurite")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run started Azurite (%v): its files went elsewhere", err)
	}
	parquet, _ := filepath.Glob(filepath.Join(out, "warehouse", "bench.db", "events", "data", "*.parquet"))
	if len(parquet) == 0 {
		t.Errorf("no data file under %s", filepath.Join(out, "warehouse"))
	}
	if h := r.Health; h != nil && (h.MetadataJSONFiles < 1 || h.MetadataDirBytes <= h.MetadataJSONBytes) {
		t.Errorf("metadata listed from the warehouse directory: %d metadata.json, dir %d B", h.MetadataJSONFiles, h.MetadataDirBytes)
	}
	u := r.Upserts
	if u == nil || !u.LastWriteWins || r.Health == nil {
		t.Fatalf("not the last-write-wins state, or no health: %+v, %+v", u, r.Health)
	}
	if !r.UpkeepSettled || r.Health.DeleteFiles != 0 || r.Health.FilesMaxPerPartition != 1 {
		t.Errorf("upkeep settled %t; %d delete files, at most %d data files in a partition, want none and 1",
			r.UpkeepSettled, r.Health.DeleteFiles, r.Health.FilesMaxPerPartition)
	}
	a := u.AppendOnly
	if a == nil || a.Rows != u.LiveRows || a.DataFiles != r.Health.Partitions || a.ScanMs <= 0 || a.UpsertScanMs <= 0 {
		t.Fatalf("append-only scan %+v, want the %d live rows in %d files", a, u.LiveRows, r.Health.Partitions)
	}
}
