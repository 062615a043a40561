package consumer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// recoveryEnv is a real broker with committed offsets and a real SQLite
// catalog with the dataset's table.
type recoveryEnv struct {
	dir string
	ds  config.Dataset
	cl  *kgo.Client
	tbl *table.Table
}

func newRecoveryEnv(t *testing.T, committed map[int32]int64) *recoveryEnv {
	t.Helper()
	ctx := context.Background()
	const topic = "clicks_v1"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ds := config.Dataset{Name: "clicks", Topic: topic, Table: "web.clicks", ConsumerGroup: "ingestor-clicks",
		CustomMapping: map[string]string{"event_id": "id", "tenant": "meta.tenant", "ts": "meta.ts"},
		Create: &config.CreateTable{
			Columns: []config.Column{
				{Name: "event_id", Type: "string", Required: true},
				{Name: "tenant", Type: "string"},
				{Name: "ts", Type: "timestamptz", Required: true},
			},
			Partition: []config.PartitionField{{Column: "tenant", Transform: "identity"}, {Column: "ts", Transform: "day"}},
		}}
	// Commit the offsets through the Kafka protocol, as a consumer would.
	if len(committed) > 0 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup(ds.ConsumerGroup), kgo.ConsumeTopics(topic))
		if err != nil {
			t.Fatal(err)
		}
		req := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range committed {
			req[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		var cerr error
		cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) { cerr = err })
		cl.Close()
		if cerr != nil {
			t.Fatal(cerr)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)

	dir := t.TempDir()
	cat, err := tables.OpenCatalog(ctx, config.Catalog{Name: "t", Properties: map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"), "sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse": "file://" + filepath.Join(dir, "warehouse"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tables.Load(ctx, cat, ds)
	if err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, "wal")
	os.MkdirAll(wal, 0o755)
	// The consumer makes the directory's id before it writes a segment.
	if _, err := walfile.WALID(wal); err != nil {
		t.Fatal(err)
	}
	return &recoveryEnv{dir: wal, ds: ds, cl: cl, tbl: tbl}
}

// segmentFile writes a real ready segment with offsets start..end.
func (e *recoveryEnv) segmentFile(t *testing.T, partition int32, start, end int64) walfile.Name {
	t.Helper()
	spec := e.tbl.Spec()
	w, err := newWriter(e.ds, config.WAL{Dir: e.dir, MaxFileSizeBytes: 1 << 30, MaxFileAgeMinutes: 5, MaxOpenSegmentsPerPartition: 10},
		e.tbl.Schema(), &spec, discardLogger(), newMetrics(newRegistry()), newBudgetAllocator(), func(context.Context, string, map[int32]int64) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	must(t, w.record(context.Background(), partition, start, event(int(start), "acme")))
	if end != start {
		must(t, w.record(context.Background(), partition, end, event(int(end), "acme")))
	}
	must(t, w.rotate(context.Background(), nil, TriggerShutdown))
	for _, f := range readyFiles(t, e.dir) {
		if f.Partition == partition && f.Start == start {
			return f.Name
		}
	}
	t.Fatal("segment not written")
	return walfile.Name{}
}

// addToTable appends the ready file n to the table, as the committer does.
func (e *recoveryEnv) addToTable(t *testing.T, n walfile.Name) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(e.dir, n.String())
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.MetaData()
	pv, err := tables.DecodePartition(e.tbl.Spec(), e.tbl.Schema(), *meta.KeyValueMetadata().FindValue(walfile.MetaPartition))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	loc := e.tbl.Location() + "/data/" + n.UUID.String() + ".parquet"
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: e.tbl.Schema(), Spec: e.tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: loc, FileSize: st.Size(), Content: iceberg.EntryContentData, PartitionValues: pv,
		FormatVersion: e.tbl.Metadata().Version(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tx := e.tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, []iceberg.DataFile{df}, tables.SnapshotProperties(e.ds.Name, []uuid.UUID{n.UUID}), table.WithoutDuplicateCheck()); err != nil {
		t.Fatal(err)
	}
	if e.tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func exists(dir string, n walfile.Name) bool {
	_, err := os.Stat(filepath.Join(dir, n.String()))
	return err == nil
}

func TestRecoveryRules(t *testing.T) {
	ctx := context.Background()
	// Partition 0: committed 100. Partition 1: committed 50. Partition 2:
	// nothing committed.
	e := newRecoveryEnv(t, map[int32]int64{0: 100, 1: 50})
	uncommittedAfter := e.segmentFile(t, 0, 100, 120) // commit == start: the offset commit never landed
	keep := e.segmentFile(t, 0, 80, 99)               // commit after end, not in the table
	inTable := e.segmentFile(t, 0, 10, 40)            // commit after end, already in the table
	neverCommitted := e.segmentFile(t, 2, 0, 5)       // no committed offset at all
	keepUploaded := e.segmentFile(t, 1, 30, 49)       // kept, with its upload marker
	e.addToTable(t, inTable)
	must(t, walfile.WriteMarker(e.dir, keepUploaded, walfile.Marker{Object: "file:///x", Size: 1}))
	must(t, walfile.WriteMarker(e.dir, uncommittedAfter, walfile.Marker{Object: "file:///y", Size: 1}))
	active := walfile.Name{State: walfile.Active, Topic: e.ds.Topic, Partition: 3, UUID: uuid.New()}
	must(t, os.WriteFile(filepath.Join(e.dir, active.String()), []byte("half a segment"), 0o644))
	other := walfile.Name{State: walfile.Ready, Topic: "another_topic", Partition: 0, Start: 0, End: 1, UUID: uuid.New()}
	must(t, os.WriteFile(filepath.Join(e.dir, other.String()), []byte("x"), 0o644))

	m := newMetrics(newRegistry())
	if err := recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, [16]byte{}, m, discardLogger()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    walfile.Name
		want bool
	}{
		{"active deleted", active, false},
		{"ready with commit at its start deleted", uncommittedAfter, false},
		{"its marker deleted too", uncommittedAfter.As(walfile.Uploaded), false},
		{"ready with no commit deleted", neverCommitted, false},
		{"ready committed, not in table, kept", keep, true},
		{"ready committed, in table, deleted", inTable, false},
		{"uploaded file kept", keepUploaded, true},
		{"its marker kept", keepUploaded.As(walfile.Uploaded), true},
		{"another dataset's file untouched", other, true},
	} {
		if got := exists(e.dir, tc.n); got != tc.want {
			t.Errorf("%s: %s exists = %v, want %v", tc.name, tc.n, got, tc.want)
		}
	}
}

func TestRecoveryRefusesOffsetInsideFile(t *testing.T) {
	e := newRecoveryEnv(t, map[int32]int64{0: 105})
	n := e.segmentFile(t, 0, 100, 120)
	err := recoverDir(context.Background(), e.dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger())
	var inside *OffsetInsideFileError
	if !errors.As(err, &inside) {
		t.Fatalf("recoverDir = %v, want an OffsetInsideFileError", err)
	}
	if inside.File != n.String() || inside.Start != 100 || inside.End != 120 || inside.Committed != 105 {
		t.Fatalf("error = %+v", inside)
	}
	if !exists(e.dir, n) {
		t.Fatal("the file was deleted although the consumer refused to start")
	}
}

func TestRecoveryNeedsKafka(t *testing.T) {
	e := newRecoveryEnv(t, nil)
	e.segmentFile(t, 0, 1, 2)
	// A client whose broker is gone cannot read the committed offsets.
	dead, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := recoverDir(ctx, e.dir, e.ds, dead, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger()); err == nil {
		t.Fatal("recovery went on without the committed offsets")
	}
	if len(readyFiles(t, e.dir)) != 1 {
		t.Fatal("recovery deleted files without knowing the committed offsets")
	}
}

// TestRecoveryCountsOnlyItsOwnCommits is the case of two instances in one
// group: this one renamed a segment to ready and died before its offset
// commit; another instance took the partition, read the same records again
// and committed past them. The file must go: its rows are in the other
// instance's files.
func TestRecoveryCountsOnlyItsOwnCommits(t *testing.T) {
	ctx := context.Background()
	e := newRecoveryEnv(t, nil)
	id, err := walfile.WALID(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	mine := e.segmentFile(t, 0, 100, 120) // renamed, never committed by us
	ours := e.segmentFile(t, 1, 10, 20)   // committed by us before the other took over
	// Partition 1: we committed 21, then "other" committed 60 and carried
	// our entry forward. Partition 0: only "other" ever committed.
	p1 := walfile.Ledger{id: 21}.With("other", 60)
	p0 := walfile.Ledger{}.With("other", 200)
	adm := kadm.NewClient(e.cl)
	resp, err := adm.CommitOffsets(ctx, e.ds.ConsumerGroup, kadm.Offsets{e.ds.Topic: {
		0: {Topic: e.ds.Topic, Partition: 0, At: 200, LeaderEpoch: -1, Metadata: p0},
		1: {Topic: e.ds.Topic, Partition: 1, At: 60, LeaderEpoch: -1, Metadata: p1},
	}})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger()); err != nil {
		t.Fatal(err)
	}
	if exists(e.dir, mine) {
		t.Error("a file only another instance's commit covers was kept: its rows would land twice")
	}
	if !exists(e.dir, ours) {
		t.Error("a file our own commit covered was deleted: its rows would be lost")
	}
}

// TestRecoveryKeepsFilesOfARecreatedTopic is the start after the topic was
// deleted and created again: Kafka dropped the group's commits with the
// old topic, and the new one has none. The old topic's rotated files are
// committed data of it: kept for the uploader and the committer, or their
// local copy deleted when already in the table; and they stay kept at
// later starts, while a file of the new topic whose commit did not land
// goes as before.
func TestRecoveryKeepsFilesOfARecreatedTopic(t *testing.T) {
	ctx := context.Background()
	// The group lives on with a commit of the new topic's partition 3.
	e := newRecoveryEnv(t, map[int32]int64{3: 0})
	m := newMetrics(newRegistry())
	oldID, newID := [16]byte{1}, [16]byte{2}
	// The consumer started on the old topic: its id is recorded.
	must(t, recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, oldID, m, discardLogger()))
	keep := e.segmentFile(t, 0, 10, 40)
	inTable := e.segmentFile(t, 1, 0, 9)
	e.addToTable(t, inTable)

	must(t, recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, newID, m, discardLogger()))
	if !exists(e.dir, keep) {
		t.Fatal("a rotated file of the old topic, not in the table, was deleted: its rows are lost")
	}
	if exists(e.dir, inTable) {
		t.Error("a rotated file of the old topic already in the table was kept")
	}

	// A file rotated from the new topic whose commit never landed, then
	// another start under the same id.
	fresh := e.segmentFile(t, 2, 0, 5)
	must(t, recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, newID, m, discardLogger()))
	if !exists(e.dir, keep) {
		t.Error("at the next start the old topic's file was judged by the new topic's offsets and deleted")
	}
	if exists(e.dir, fresh) {
		t.Error("a file of the new topic whose commit never landed was kept: its rows would land twice")
	}
	rec, found, err := walfile.ReadTopicRecord(e.dir, e.ds.Topic)
	if err != nil || !found {
		t.Fatalf("topic id record: found %v, %v", found, err)
	}
	if len(rec.Older) != 1 || rec.Older[0] != keep.UUID {
		t.Errorf("record lists %v as older, want only %s", rec.Older, keep.UUID)
	}
}
