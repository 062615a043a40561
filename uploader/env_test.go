package uploader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const container = "warehouse"

var columns = []config.Column{
	{Name: "id", Type: "long", Required: true},
	{Name: "tenant", Type: "string"},
	{Name: "ts", Type: "timestamptz"},
}

// Two datasets: clicks with bloom filters on two columns, orders without.
// Their topics hold a dot and an underscore, which WAL names must survive.
func datasets() []config.Dataset {
	mapping := map[string]string{"id": "id", "tenant": "tenant", "ts": "ts"}
	return []config.Dataset{
		{Name: "clicks", Topic: "clicks.v1", Table: "demo.clicks", CustomMapping: mapping,
			BloomFilterColumns: []string{"tenant", "id"}, Create: &config.CreateTable{Columns: columns}},
		{Name: "orders", Topic: "orders_topic", Table: "demo.orders", CustomMapping: mapping,
			Create: &config.CreateTable{Columns: columns}},
	}
}

// env is one uploader's world: a WAL directory, a SQLite catalog whose
// warehouse is on Azurite or on the local disk, and what the test reads
// back with.
type env struct {
	t     *testing.T
	dir   string
	cfg   *config.Config
	az    *devenv.Azurite
	store storage.Store
	reg   *prometheus.Registry
	logs  *testutil.SyncBuffer
}

func newEnv(t *testing.T, onAzure bool) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, dir: filepath.Join(root, "wal"), reg: prometheus.NewRegistry(), logs: &testutil.SyncBuffer{}}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"type":        "sql",
		"uri":         "file:" + filepath.Join(root, "catalog.db"),
		"sql.driver":  "sqlite",
		"sql.dialect": "sqlite",
		"warehouse":   "file://" + filepath.Join(root, "warehouse"),
	}
	if onAzure {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a, err := devenv.StartAzurite(ctx, filepath.Join(root, "azurite"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Stop() })
		if err := a.CreateContainer(ctx, container); err != nil {
			t.Fatal(err)
		}
		e.az = a
		for k, v := range a.Properties() {
			props[k] = v
		}
		props["warehouse"] = a.Location(container, "wh")
	}
	e.cfg = &config.Config{
		Ingestion: config.Ingestion{DrainTimeoutSeconds: 30, WAL: config.WAL{Dir: e.dir}},
		Catalog:   config.Catalog{Name: "test", Properties: props},
		Datasets:  datasets(),
	}
	e.store = storage.Open(props)
	t.Cleanup(func() { e.store.(interface{ CloseIdleConnections() }).CloseIdleConnections() })
	return e
}

// newUploader builds an uploader with fast timing: scans every 200 ms,
// backoff from 100 ms to 400 ms.
func (e *env) newUploader(options ...option) *Uploader {
	e.t.Helper()
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	options = append([]option{withTiming(200*time.Millisecond, 100*time.Millisecond, 400*time.Millisecond)}, options...)
	u, err := New(e.cfg, role.Options{Logger: log, Registerer: e.reg}, options...)
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// run starts u.Run. cancel starts its drain; wait returns Run's result,
// failing the test if it takes over a minute. Cleanup cancels and waits.
func (e *env) run(u *Uploader) (cancel func(), wait func() error, done <-chan struct{}) {
	ctx, cancelCtx := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var result error
	go func() {
		result = u.Run(ctx)
		close(ch)
	}()
	wait = func() error {
		select {
		case <-ch:
			return result
		case <-time.After(time.Minute):
			e.t.Fatal("Run did not return within a minute")
			return nil
		}
	}
	e.t.Cleanup(func() {
		cancelCtx()
		wait()
	})
	return cancelCtx, wait, ch
}

// segment is a ready file written by the test.
type segment struct {
	name walfile.Name
	data []byte
	ids  []int64
	tens []string
}

// writeReady writes rows into a ready file the way the consumer does: a
// Parquet file with the table's field IDs, written under a tmp_ name and
// renamed. Tenants are unique per segment ("<prefix>-<i>"); every tenth is
// null.
func (e *env) writeReady(topic string, partition int32, start int64, rows int, prefix string) segment {
	e.t.Helper()
	schema, err := tables.BuildSchema(columns)
	if err != nil {
		e.t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		e.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	seg := segment{name: walfile.Name{State: walfile.Ready, Topic: topic, Partition: partition, Start: start, End: start + int64(rows) - 1, UUID: uuid.New()}}
	base := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for i := range rows {
		id := start + int64(i)
		seg.ids = append(seg.ids, id)
		b.Field(0).(*array.Int64Builder).Append(id)
		if i%10 == 9 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			ten := fmt.Sprintf("%s-%d", prefix, i)
			seg.tens = append(seg.tens, ten)
			b.Field(1).(*array.StringBuilder).Append(ten)
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		e.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	seg.data = buf.Bytes()
	// The consumer records the file's checksum before the rename.
	if err := walfile.WriteSum(e.dir, seg.name.UUID, walfile.Sum{Size: int64(len(seg.data)), CRC32C: crc32.Checksum(seg.data, walfile.Castagnoli)}); err != nil {
		e.t.Fatal(err)
	}
	tmp := filepath.Join(e.dir, walfile.TmpPrefix+seg.name.String())
	if err := os.WriteFile(tmp, seg.data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(e.dir, seg.name.String())); err != nil {
		e.t.Fatal(err)
	}
	return seg
}

// marker returns the segment's marker, or false if it has none.
func (e *env) marker(n walfile.Name) (walfile.Marker, bool) {
	m, err := walfile.ReadMarker(e.dir, n)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return m, true
}

func (e *env) waitMarked(timeout time.Duration, names ...walfile.Name) {
	e.t.Helper()
	waitFor(e.t, timeout, func() bool {
		for _, n := range names {
			if _, ok := e.marker(n); !ok {
				return false
			}
		}
		return true
	}, fmt.Sprintf("markers of %d files", len(names)))
}

// get reads an object back from storage.
func (e *env) get(location string) []byte {
	e.t.Helper()
	rc, err := e.store.Get(context.Background(), location)
	if err != nil {
		e.t.Fatalf("get %s: %v", location, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// metric returns the value of a series from the registry, by its full name
// and dataset label ("" for none).
func (e *env) metric(name, dataset string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := dataset == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "dataset" && l.GetValue() == dataset {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	e.t.Fatalf("no series %s{dataset=%q}", name, dataset)
	return 0
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fixedLocator is a locator with a fixed answer per dataset, for tests that
// need no catalog.
type fixedLocator map[string]string

func (f fixedLocator) DataLocation(_ context.Context, d config.Dataset) (string, error) {
	loc, ok := f[d.Name]
	if !ok {
		return "", fmt.Errorf("no location for dataset %s", d.Name)
	}
	return loc, nil
}

func (fixedLocator) Forget(string) {}
