package committer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// The two datasets of the tests: clicks partitioned by day(ts), orders by
// identity(region) with a decimal column.
func testDatasets() []config.Dataset {
	return []config.Dataset{
		{
			Name: "clicks", Topic: "clicks", Table: "web.clicks", ConsumerGroup: "ingestor-clicks",
			StartOffset: "earliest", CustomMapping: map[string]string{"id": "id"},
			Create: &config.CreateTable{
				Columns: []config.Column{
					{Name: "id", Type: "long", Required: true},
					{Name: "user", Type: "string"},
					{Name: "ts", Type: "timestamptz"},
				},
				Partition: []config.PartitionField{{Column: "ts", Transform: "day"}},
			},
		},
		{
			Name: "orders", Topic: "orders", Table: "shop.orders", ConsumerGroup: "ingestor-orders",
			StartOffset: "earliest", CustomMapping: map[string]string{"order_id": "id"},
			Create: &config.CreateTable{
				Columns: []config.Column{
					{Name: "order_id", Type: "string", Required: true},
					{Name: "amount", Type: "decimal(10,2)"},
					{Name: "region", Type: "string"},
				},
				Partition: []config.PartitionField{{Column: "region", Transform: "identity"}},
			},
		},
	}
}

// env is one test's world: a kfake cluster with the datasets' topics, a
// catalog with a local warehouse, and WAL directories.
type env struct {
	t        *testing.T
	root     string
	catalog  config.Catalog
	cat      catalog.Catalog // the test's own handle, to check the tables
	kafka    *kfake.Cluster
	adm      *kadm.Client
	datasets []config.Dataset
}

// sqliteCatalog is an SQLite catalog with a file:// warehouse in dir.
func sqliteCatalog(dir string) config.Catalog {
	return config.Catalog{Name: "test", Properties: map[string]string{
		"type":        "sql",
		"uri":         "file:" + filepath.Join(dir, "catalog.db"),
		"sql.driver":  "sqlite",
		"sql.dialect": "sqlite",
		"warehouse":   "file://" + filepath.Join(dir, "warehouse"),
	}}
}

func newEnv(t *testing.T, cat config.Catalog) *env {
	t.Helper()
	e := &env{t: t, root: t.TempDir(), catalog: cat, datasets: testDatasets()}
	kc, err := kfake.NewCluster(kfake.SeedTopics(2, "clicks", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	e.kafka = kc
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	e.adm = kadm.NewClient(cl)
	e.cat, err = tables.OpenCatalog(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cl, ok := e.cat.(catalog.Closer); ok {
			cl.Close()
		}
	})
	return e
}

// config returns a configuration for a committer on walDir.
func (e *env) config(walDir string) *config.Config {
	return &config.Config{
		Ingestion: config.Ingestion{
			CommitIntervalSeconds: 0.2,
			DrainTimeoutSeconds:   10,
			WAL:                   config.WAL{Dir: walDir},
		},
		Kafka:    config.Kafka{Brokers: e.kafka.ListenAddrs(), ClientID: "committer-test"},
		Catalog:  e.catalog,
		Datasets: e.datasets,
	}
}

// walDir makes a new WAL directory.
func (e *env) walDir(name string) string {
	d := filepath.Join(e.root, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		e.t.Fatal(err)
	}
	// The consumer makes the directory's id before it writes a segment.
	if _, err := walfile.WALID(d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) dataset(name string) config.Dataset {
	for _, d := range e.datasets {
		if d.Name == name {
			return d
		}
	}
	e.t.Fatalf("no dataset %s", name)
	return config.Dataset{}
}

// table loads (creating if needed) a dataset's table through the test's
// own catalog handle.
func (e *env) table(name string) *table.Table {
	e.t.Helper()
	var err error
	// After a catalog database restart the first use of each pooled
	// connection fails once; the pool then drops it.
	for range 5 {
		var tbl *table.Table
		if tbl, err = tables.Load(context.Background(), e.cat, e.dataset(name)); err == nil {
			return tbl
		}
	}
	e.t.Fatal(err)
	return nil
}

// commitOffset commits a real group offset: the next offset the group reads.
func (e *env) commitOffset(dataset string, partition int32, next int64) {
	e.t.Helper()
	d := e.dataset(dataset)
	var os kadm.Offsets
	os.AddOffset(d.Topic, partition, next, -1)
	if err := e.adm.CommitAllOffsets(context.Background(), d.ConsumerGroup, os); err != nil {
		e.t.Fatalf("commit offset %s/%d=%d: %v", d.Topic, partition, next, err)
	}
}

// seg is a segment a test wrote: its name and rows.
type seg struct {
	name walfile.Name
	rows []map[string]any
}

// writeSegment writes a ready segment as the consumer does (table field
// IDs, partition values in the footer), and, when upload is set, copies it
// to the warehouse and writes its marker as the uploader does.
// meta adds key-value pairs to the footer.
func (e *env) writeSegment(walDir, dataset string, partition int32, start int64, rows []map[string]any, upload bool, meta ...[2]string) seg {
	e.t.Helper()
	d := e.dataset(dataset)
	tbl := e.table(dataset)
	n := walfile.Name{State: walfile.Ready, Topic: d.Topic, Partition: partition,
		Start: start, End: start + int64(len(rows)) - 1, UUID: uuid.New()}
	path := filepath.Join(walDir, n.String())
	writeParquet(e.t, path, tbl, rows, meta...)
	if upload {
		e.upload(walDir, tbl, n)
	}
	return seg{name: n, rows: rows}
}

// upload copies a ready segment to the table's data directory and writes
// its marker.
func (e *env) upload(walDir string, tbl *table.Table, n walfile.Name) {
	e.t.Helper()
	loc := strings.TrimSuffix(tbl.Location(), "/") + "/data/" + n.UUID.String() + ".parquet"
	dst := strings.TrimPrefix(loc, "file://")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		e.t.Fatal(err)
	}
	size := copyFile(e.t, filepath.Join(walDir, n.String()), dst)
	if err := walfile.WriteMarker(walDir, n, walfile.Marker{Object: loc, Size: size}); err != nil {
		e.t.Fatal(err)
	}
}

// keepWAL copies every file of the WAL directory aside and returns the
// copies' directory and a restore that puts them all back: the local files
// of a committer that died before deleting them.
func keepWAL(t *testing.T, wal string) (saved string, restore func()) {
	t.Helper()
	saved = t.TempDir()
	names := walNames(t, wal)
	for _, n := range names {
		copyFile(t, filepath.Join(wal, n), filepath.Join(saved, n))
	}
	return saved, func() {
		for _, n := range names {
			copyFile(t, filepath.Join(saved, n), filepath.Join(wal, n))
		}
	}
}

func copyFile(t *testing.T, src, dst string) int64 {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(out, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// partitionValues computes what the consumer records for a row: each
// partition field's transform applied to the row's source value.
func partitionValues(t *testing.T, tbl *table.Table, row map[string]any) map[int]any {
	t.Helper()
	vals := map[int]any{}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		src, _ := tbl.Schema().FindFieldByID(f.SourceID())
		var lit iceberg.Literal
		switch v := row[src.Name].(type) {
		case iceberg.Timestamp:
			lit = iceberg.NewLiteral(v)
		case string:
			lit = iceberg.NewLiteral(v)
		default:
			t.Fatalf("no literal for %T", v)
		}
		vals[f.FieldID] = f.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit}).Val.Any()
	}
	return vals
}

// writeParquet writes rows with tbl's schema and field IDs and the
// partition footer key, like the consumer.
func writeParquet(t *testing.T, path string, tbl *table.Table, rows []map[string]any, meta ...[2]string) {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, row := range rows {
		for i, f := range sc.Fields() {
			switch fb := b.Field(i).(type) {
			case *array.Int64Builder:
				fb.Append(row[f.Name].(int64))
			case *array.StringBuilder:
				fb.Append(row[f.Name].(string))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(row[f.Name].(iceberg.Timestamp)))
			case *array.Decimal128Builder:
				fb.Append(row[f.Name].(iceberg.Decimal).Val)
			default:
				t.Fatalf("no test support for %T", fb)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, err := tables.EncodePartition(partitionValues(t, tbl, rows[0]))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendKeyValueMetadata(walfile.MetaPartition, enc); err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	ident, _ := json.Marshal(walfile.TableIdentity{UUID: tbl.Metadata().TableUUID().String(), SchemaID: tbl.Schema().ID, SpecID: spec.ID()})
	if err := w.AppendKeyValueMetadata(walfile.MetaTable, string(ident)); err != nil {
		t.Fatal(err)
	}
	for _, kv := range meta {
		if err := w.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// day returns a timestamp in microseconds on the given day of June 2024.
func day(d, hour int) iceberg.Timestamp {
	return iceberg.Timestamp(time.Date(2024, 6, d, hour, 0, 0, 0, time.UTC).UnixMicro())
}

// clickRows makes n rows of clicks from id on, all on one day.
func clickRows(id int64, n int, d int) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{"id": id + int64(i), "user": fmt.Sprintf("u%d", id+int64(i)), "ts": day(d, i%24)}
	}
	return rows
}

func orderRows(prefix string, n int, region string) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		num, _ := decimal.Decimal128FromString(fmt.Sprintf("%d.25", 10+i), 10, 2)
		rows[i] = map[string]any{"order_id": fmt.Sprintf("%s-%d", prefix, i), "amount": iceberg.Decimal{Val: num, Scale: 2}, "region": region}
	}
	return rows
}

// newCommitter builds a committer with its own registry.
func newCommitter(t *testing.T, cfg *config.Config) *Committer {
	t.Helper()
	c, err := New(cfg, role.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connect gives c its Kafka client for passes run outside Run; the test's
// end closes it and c's catalog.
func connect(t *testing.T, c *Committer) {
	t.Helper()
	closeKafka, err := c.connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.closeCatalog()
		closeKafka()
	})
}

// runPass runs one commit pass of c outside Run, with its Kafka client.
func runPass(t *testing.T, c *Committer) {
	t.Helper()
	closeKafka, err := c.connect()
	if err != nil {
		t.Fatal(err)
	}
	defer closeKafka()
	defer c.closeCatalog()
	c.pass(context.Background())
}

// walNames lists the names of the files in a WAL directory.
func walNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name.String())
	}
	sort.Strings(names)
	return names
}

// snapshots returns the table's snapshots, oldest first.
func snapshots(tbl *table.Table) []table.Snapshot {
	return tbl.Metadata().Snapshots()
}

// scanColumn reads every value of a string or int64 column of the table,
// formatted, sorted.
func scanColumn(t *testing.T, tbl *table.Table, col string) []string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices(col)
	if len(idx) != 1 {
		t.Fatalf("no column %s in %s", col, at.Schema())
	}
	var out []string
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			out = append(out, chunk.ValueStr(i))
		}
	}
	sort.Strings(out)
	return out
}

// wantColumn lists the formatted values of col in the segments, sorted.
func wantColumn(col string, segs ...seg) []string {
	var out []string
	for _, s := range segs {
		for _, r := range s.rows {
			out = append(out, fmt.Sprint(r[col]))
		}
	}
	sort.Strings(out)
	return out
}

// filesByUUID maps each data file of the table's current snapshot to its
// partition values, keyed by the segment UUID in its path.
func filesByUUID(t *testing.T, tbl *table.Table) map[uuid.UUID]map[int]any {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[uuid.UUID]map[int]any{}
	for _, task := range tasks {
		base := filepath.Base(task.File.FilePath())
		id, err := uuid.Parse(strings.TrimSuffix(base, ".parquet"))
		if err != nil {
			t.Fatalf("data file %s is not a segment: %v", task.File.FilePath(), err)
		}
		out[id] = task.File.Partition()
	}
	return out
}

// waitFor polls cond until it holds or the timeout ends.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
