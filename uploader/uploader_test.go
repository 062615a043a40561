package uploader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

func names(segs ...segment) []walfile.Name {
	var out []walfile.Name
	for _, s := range segs {
		out = append(out, s.name)
	}
	return out
}

// dataLocations loads each dataset's table through the catalog, as the
// committer will, and returns where its data files belong.
func (e *env) dataLocations() map[string]string {
	e.t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, e.cfg.Catalog)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cat.(interface{ Close() error }).Close()
	out := map[string]string{}
	for _, d := range e.cfg.Datasets {
		tbl, err := tables.Load(ctx, cat, d)
		if err != nil {
			e.t.Fatal(err)
		}
		out[d.Name] = strings.TrimRight(tbl.Location(), "/") + "/data"
	}
	return out
}

// checkUploaded checks a segment's marker, object and sidecars.
func (e *env) checkUploaded(seg segment, dataLoc string) walfile.Marker {
	e.t.Helper()
	m, ok := e.marker(seg.name)
	if !ok {
		e.t.Fatalf("%s has no marker", seg.name)
	}
	want := dataLoc + "/" + seg.name.UUID.String() + ".parquet"
	if m.Object != want || m.Size != int64(len(seg.data)) {
		e.t.Fatalf("marker %+v, want object %s of %d bytes", m, want, len(seg.data))
	}
	if got := e.get(m.Object); !bytes.Equal(got, seg.data) {
		e.t.Fatalf("object %s: %d bytes differ from the %d of the ready file", m.Object, len(got), len(seg.data))
	}
	if _, err := os.Stat(filepath.Join(e.dir, seg.name.String())); err != nil {
		e.t.Fatalf("the uploader touched the ready file: %v", err)
	}
	d, _ := e.cfg.DatasetByTopic(seg.name.Topic)
	if len(m.Blooms) != len(d.BloomFilterColumns) {
		e.t.Fatalf("marker sidecars %v, want one for each of %v", m.Blooms, d.BloomFilterColumns)
	}
	for _, col := range d.BloomFilterColumns {
		loc := m.Blooms[col]
		if loc != dataLoc+"/"+seg.name.UUID.String()+".bloom."+col {
			e.t.Fatalf("sidecar of %s at %q", col, loc)
		}
		f, err := bloom.Read(bytes.NewReader(e.get(loc)))
		if err != nil {
			e.t.Fatalf("sidecar %s: %v", loc, err)
		}
		if f.Column != col {
			e.t.Fatalf("sidecar %s holds column %q", loc, f.Column)
		}
		typ, values := "string", seg.tens
		if col == "id" {
			typ, values = "long", nil
			for _, id := range seg.ids {
				values = append(values, strconv.FormatInt(id, 10))
			}
		}
		if f.Count() != uint64(len(values)) {
			e.t.Fatalf("sidecar %s holds %d values, want %d (nulls left out)", col, f.Count(), len(values))
		}
		for _, v := range values {
			q, err := bloom.QueryValue(typ, v)
			if err != nil {
				e.t.Fatal(err)
			}
			if !f.MayContain(q) {
				e.t.Fatalf("sidecar %s: false negative for %q", col, v)
			}
		}
		fp := 0
		for i := range 1000 {
			q, _ := bloom.QueryValue(typ, fmt.Sprint(-1-i))
			if col == "tenant" {
				q, _ = bloom.QueryValue(typ, fmt.Sprintf("absent-%d", i))
			}
			if f.MayContain(q) {
				fp++
			}
		}
		if fp > 50 {
			e.t.Fatalf("sidecar %s: %d of 1000 absent values match", col, fp)
		}
	}
	return m
}

// TestUpload uploads segments of two datasets to Azurite and to a local
// warehouse, through a real SQLite catalog, and checks markers, objects,
// sidecars and metrics; then deletes a marker and sees the same objects
// written again.
func TestUpload(t *testing.T) {
	for _, onAzure := range []bool{true, false} {
		name := "local warehouse"
		if onAzure {
			name = "azurite"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, onAzure)
			ctx := context.Background()
			locs := e.dataLocations()

			// Already uploaded: has a marker, so it must not be uploaded again.
			old := e.writeReady("orders_topic", 0, 0, 10, "old")
			if err := walfile.WriteMarker(e.dir, old.name, walfile.Marker{Object: "elsewhere", Size: 1}); err != nil {
				t.Fatal(err)
			}
			// An open segment is the consumer's, never uploaded.
			active := walfile.Name{State: walfile.Active, Topic: "clicks.v1", Partition: 0, UUID: uuid.New()}
			if err := os.WriteFile(filepath.Join(e.dir, active.String()), []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
			segs := []segment{
				e.writeReady("clicks.v1", 0, 100, 1000, "p0"),
				e.writeReady("clicks.v1", 1, 0, 500, "p1"),
				e.writeReady("orders_topic", 0, 10, 20, "o"),
			}
			u := e.newUploader()
			cancel, wait, _ := e.run(u)
			e.waitMarked(time.Minute, names(segs...)...)

			var clicksBytes int
			for _, s := range segs {
				d, _ := e.cfg.DatasetByTopic(s.name.Topic)
				e.checkUploaded(s, locs[d.Name])
				if d.Name == "clicks" {
					clicksBytes += len(s.data)
				}
			}
			for _, n := range []walfile.Name{old.name, active} {
				if _, err := e.store.Get(ctx, locs["orders"]+"/"+n.UUID.String()+".parquet"); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("%s was uploaded (%v)", n, err)
				}
			}
			if _, err := e.store.Get(ctx, locs["clicks"]+"/"+active.UUID.String()+".parquet"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("active segment uploaded (%v)", err)
			}
			// The marker comes before the attempt is counted
			// (uploader.after-marker): wait for the counts too.
			waitFor(t, 5*time.Second, func() bool {
				return e.metric("ingestor_uploader_pending_files", "clicks") == 0 &&
					e.metric("ingestor_uploader_files_uploaded_total", "clicks") == 2 &&
					e.metric("ingestor_uploader_files_uploaded_total", "orders") == 1 &&
					e.metric("ingestor_uploader_upload_seconds", "") == 3
			}, "pending 0 and every upload counted")
			for _, c := range []struct {
				name, dataset string
				want          float64
			}{
				{"ingestor_uploader_files_uploaded_total", "clicks", 2},
				{"ingestor_uploader_files_uploaded_total", "orders", 1},
				{"ingestor_uploader_bytes_uploaded_total", "clicks", float64(clicksBytes)},
				{"ingestor_uploader_bytes_uploaded_total", "orders", float64(len(segs[2].data))},
				{"ingestor_uploader_upload_failures_total", "clicks", 0},
				{"ingestor_uploader_pending_files", "orders", 0},
				{"ingestor_uploader_upload_seconds", "", 3},
			} {
				if got := e.metric(c.name, c.dataset); got != c.want {
					t.Errorf("%s{dataset=%q} = %v, want %v", c.name, c.dataset, got, c.want)
				}
			}

			// A lost marker (a crash between the upload and the marker)
			// means the same objects are written again. Spoil the stored
			// object first, to see it rewritten.
			first, _ := e.marker(segs[0].name)
			if err := e.store.Put(ctx, first.Object, strings.NewReader("spoiled"), 7); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(e.dir, segs[0].name.As(walfile.Uploaded).String())); err != nil {
				t.Fatal(err)
			}
			e.waitMarked(time.Minute, segs[0].name)
			if again := e.checkUploaded(segs[0], locs["clicks"]); fmt.Sprint(again) != fmt.Sprint(first) {
				t.Fatalf("marker after re-upload %+v, before %+v", again, first)
			}
			// The marker is written before the counter moves: wait for it.
			waitFor(t, 5*time.Second, func() bool {
				return e.metric("ingestor_uploader_files_uploaded_total", "clicks") == 3
			}, "files uploaded 3 after the re-upload")

			cancel()
			if err := wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if walfile.Held(e.dir, role.Uploader) {
				t.Fatal("uploader lock held after Run returned")
			}
			entries, _ := os.ReadDir(e.dir)
			for _, en := range entries {
				if strings.HasPrefix(en.Name(), walfile.TmpPrefix) {
					t.Fatalf("tmp file left: %s", en.Name())
				}
			}
		})
	}
}

// TestReactsAtOnce sets the periodic scan to an hour: a new ready file is
// found by the directory watch.
func TestReactsAtOnce(t *testing.T) {
	e := newEnv(t, false)
	locs := e.dataLocations()
	first := e.writeReady("orders_topic", 0, 0, 5, "a")
	u := e.newUploader(withTiming(time.Hour, time.Hour, time.Hour))
	e.run(u)
	e.waitMarked(30*time.Second, first.name) // the scan at start
	// The end of the first upload triggers one more scan, minScanGap
	// later; a file written before it would be found without the watch.
	// Past it, only the watch (or the hourly scan) can find the next one.
	time.Sleep(20 * minScanGap)
	second := e.writeReady("orders_topic", 0, 5, 5, "b")
	e.waitMarked(5*time.Second, second.name)
	e.checkUploaded(second, locs["orders"])
}

// TestUploadsAHandedBackFileAtOnce sets the periodic scan to an hour and
// does what the committer does when a segment's object is gone before its
// append (committer/objects.go): it deletes the marker. The directory
// watch sees the marker go and the uploader stores the object again from
// the ready file, with a new marker, at once. Before, a deleted marker
// was seen only by the next scan.
func TestUploadsAHandedBackFileAtOnce(t *testing.T) {
	e := newEnv(t, false)
	locs := e.dataLocations()
	seg := e.writeReady("clicks.v1", 0, 0, 5, "a")
	u := e.newUploader(withTiming(time.Hour, time.Hour, time.Hour))
	e.run(u)
	e.waitMarked(30*time.Second, seg.name) // the scan at start
	m, _ := e.marker(seg.name)
	time.Sleep(20 * minScanGap) // past the scan the end of the upload triggers
	// The orphan cleanup took the object and a sidecar; the committer
	// hands the segment back.
	for _, loc := range []string{m.Object, m.Blooms["tenant"]} {
		if err := e.store.Delete(context.Background(), loc); err != nil {
			t.Fatal(err)
		}
	}
	if err := walfile.Remove(filepath.Join(e.dir, seg.name.As(walfile.Uploaded).String())); err != nil {
		t.Fatal(err)
	}
	e.waitMarked(5*time.Second, seg.name)
	e.checkUploaded(seg, locs["clicks"])
	if _, err := e.store.Stat(context.Background(), m.Blooms["tenant"]); err != nil {
		t.Fatalf("sidecar not stored again: %v", err)
	}
	if n := testutil.ToFloat64(u.m.scans); n != 1 {
		t.Fatalf("the directory was listed %v times, want once (at start): the watch must find the handed-back file", n)
	}
}

// TestNamedFilesNeedNoScan writes ready files one after the other, as a
// rotation does, with the periodic scan set to an hour: each is uploaded
// from the name the watch gives, and the directory is listed only at
// start. Before, every file that appeared, and every upload that ended
// with nothing queued, listed the whole directory again.
func TestNamedFilesNeedNoScan(t *testing.T) {
	e := newEnv(t, false)
	locs := e.dataLocations()
	u := e.newUploader(withTiming(time.Hour, time.Hour, time.Hour))
	e.run(u)
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(u.m.scans) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no scan at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var segs []segment
	for i := 0; i < 30; i++ {
		segs = append(segs, e.writeReady("orders_topic", int32(i%3), int64(i)*5, 5, fmt.Sprint("s", i)))
		time.Sleep(2 * minScanGap / 3)
	}
	e.waitMarked(30*time.Second, names(segs...)...)
	for _, s := range segs {
		e.checkUploaded(s, locs["orders"])
	}
	if n := testutil.ToFloat64(u.m.scans); n != 1 {
		t.Fatalf("the directory was listed %v times for 30 named files, want once (at start)", n)
	}
}

// TestStorageOutage stops Azurite while segments arrive: uploads fail and
// are counted, nothing is marked or lost, and after Azurite is back every
// segment is uploaded.
func TestStorageOutage(t *testing.T) {
	e := newEnv(t, true)
	locs := e.dataLocations()
	u := e.newUploader()
	cancel, wait, _ := e.run(u)

	a := e.writeReady("clicks.v1", 0, 0, 100, "a")
	e.waitMarked(time.Minute, a.name)

	t0 := time.Now()
	if err := e.az.Stop(); err != nil {
		t.Fatal(err)
	}
	b := e.writeReady("clicks.v1", 0, 100, 100, "b")
	c := e.writeReady("orders_topic", 3, 0, 50, "c")
	// A failed upload makes the uploader load the table again, which
	// during the outage fails only after the catalog's file IO retries.
	waitFor(t, 2*time.Minute, func() bool {
		return e.metric("ingestor_uploader_upload_failures_total", "clicks") >= 2 &&
			e.metric("ingestor_uploader_upload_failures_total", "orders") >= 1
	}, "failed attempts of both datasets")
	t.Logf("failures counted %s after the stop", time.Since(t0).Round(time.Millisecond))
	for _, s := range []segment{b, c} {
		if _, ok := e.marker(s.name); ok {
			t.Fatalf("%s marked during the outage", s.name)
		}
		if _, err := os.Stat(filepath.Join(e.dir, s.name.String())); err != nil {
			t.Fatalf("ready file lost during the outage: %v", err)
		}
	}
	if got := e.metric("ingestor_uploader_pending_files", "clicks"); got != 1 {
		t.Fatalf("pending clicks %v during the outage, want 1", got)
	}
	// One line per dataset however many attempts fail within 30 s, with
	// the keys an operator filters on.
	var clicksLines int
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "upload failed") && strings.Contains(line, `"dataset":"clicks"`) {
			clicksLines++
			for _, key := range []string{`"topic":"clicks.v1"`, `"partition":0`, `"file":"` + b.name.String() + `"`, `"error":`} {
				if !strings.Contains(line, key) {
					t.Errorf("failure log lacks %s: %s", key, line)
				}
			}
		}
	}
	if clicksLines != 1 {
		t.Errorf("%d failure lines for clicks, want 1 (rate-limited)", clicksLines)
	}

	ctx, cancelStart := context.WithTimeout(context.Background(), time.Minute)
	defer cancelStart()
	if err := e.az.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	e.waitMarked(2*time.Minute, b.name, c.name)
	t.Logf("uploads resumed %s after the restart", time.Since(t1).Round(time.Millisecond))
	for _, s := range []segment{a, b} {
		e.checkUploaded(s, locs["clicks"])
	}
	e.checkUploaded(c, locs["orders"])
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// TestDrainOrder holds the consumer's lock: after cancellation the uploader
// keeps uploading new segments, and returns only after the lock is
// released and a final pass has retried a file that waits in backoff.
func TestDrainOrder(t *testing.T) {
	e := newEnv(t, false)
	root := t.TempDir()
	// The clicks data location is a regular file at first, so its uploads
	// fail; backoff is an hour, so only the final pass tries again.
	blocked := filepath.Join(root, "clicks")
	if err := os.WriteFile(blocked, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	locs := fixedLocator{"clicks": "file://" + blocked, "orders": "file://" + filepath.Join(root, "orders")}
	consumer, err := walfile.AcquireLock(e.dir, role.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Release()
	u := e.newUploader(withLocator(locs), withTiming(time.Hour, time.Hour, time.Hour))
	cancel, wait, done := e.run(u)

	a := e.writeReady("clicks.v1", 0, 0, 10, "a")
	waitFor(t, 30*time.Second, func() bool { return e.metric("ingestor_uploader_upload_failures_total", "clicks") == 1 }, "the first failure")
	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}

	cancel()
	// The consumer rotates its last segment while draining: uploaded now.
	b := e.writeReady("orders_topic", 1, 0, 10, "b")
	e.waitMarked(10*time.Second, b.name)
	select {
	case <-done:
		t.Fatalf("Run returned (%v) while the consumer holds its lock", wait())
	case <-time.After(time.Second):
	}
	if _, ok := e.marker(a.name); ok {
		t.Fatal("the file in backoff was retried before the final pass")
	}

	consumer.Release()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	m, ok := e.marker(a.name)
	if !ok {
		t.Fatal("the final pass did not retry the file in backoff")
	}
	if m.Object != locs["clicks"]+"/"+a.name.UUID.String()+".parquet" {
		t.Fatalf("marker %+v", m)
	}
	if got := e.metric("ingestor_uploader_upload_failures_total", "clicks"); got != 1 {
		t.Fatalf("failures %v, want 1", got)
	}
}

// TestDrainDeadline: a consumer that never lets go bounds the drain by
// ingestion.drainTimeoutSeconds.
func TestDrainDeadline(t *testing.T) {
	e := newEnv(t, false)
	e.cfg.Ingestion.DrainTimeoutSeconds = 0.5
	consumer, err := walfile.AcquireLock(e.dir, role.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Release()
	u := e.newUploader(withLocator(fixedLocator{}))
	cancel, wait, _ := e.run(u)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 400*time.Millisecond || took > 5*time.Second {
		t.Fatalf("drain took %s with a 0.5 s deadline", took)
	}
}

// TestFailureKeepsFile: a bloom column missing from the file fails every
// attempt; the file is never marked nor removed, failures are counted and
// logged once.
func TestFailureKeepsFile(t *testing.T) {
	e := newEnv(t, false)
	e.cfg.Datasets[0].BloomFilterColumns = []string{"tenant", "no_such_column"}
	u := e.newUploader(withLocator(fixedLocator{"clicks": "file://" + t.TempDir()}))
	e.run(u)
	s := e.writeReady("clicks.v1", 2, 40, 10, "x")
	waitFor(t, 30*time.Second, func() bool { return e.metric("ingestor_uploader_upload_failures_total", "clicks") >= 3 }, "three failures")
	if _, ok := e.marker(s.name); ok {
		t.Fatal("a failed file was marked")
	}
	if _, err := os.Stat(filepath.Join(e.dir, s.name.String())); err != nil {
		t.Fatal(err)
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "upload failed"); n != 1 {
		t.Fatalf("%d failure lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, `no_such_column`) || !strings.Contains(logs, `"partition":2`) {
		t.Fatalf("failure log lacks the cause or the partition:\n%s", logs)
	}
	if got := e.metric("ingestor_uploader_pending_files", "clicks"); got != 1 {
		t.Fatalf("pending %v, want 1", got)
	}
}

func TestSecondUploaderRefused(t *testing.T) {
	e := newEnv(t, false)
	u := e.newUploader(withLocator(fixedLocator{}))
	e.run(u)
	waitFor(t, 10*time.Second, func() bool { return walfile.Held(e.dir, role.Uploader) }, "the first uploader's lock")
	other, err := New(e.cfg, role.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Run(context.Background()); err == nil {
		t.Fatal("a second uploader ran on the same WAL directory")
	}
}

// TestDataLocation reads the data location of real tables: the
// write.data.path property when set, else <location>/data.
func TestDataLocation(t *testing.T) {
	e := newEnv(t, false)
	custom := "file://" + filepath.Join(t.TempDir(), "custom-data")
	e.cfg.Datasets[1].Create.Properties = map[string]string{"write.data.path": custom + "/"}
	l := newCatalogLocator(e.cfg.Catalog)
	defer l.Close()
	ctx := context.Background()
	got, err := l.DataLocation(ctx, e.cfg.Datasets[1])
	if err != nil {
		t.Fatal(err)
	}
	if got != custom {
		t.Fatalf("data location %q, want %q", got, custom)
	}
	got, err = l.DataLocation(ctx, e.cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	want := "file://" + filepath.Join(filepath.Dir(e.dir), "warehouse")
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "/data") {
		t.Fatalf("data location %q, want %s/.../data", got, want)
	}
	l.Forget("clicks")
	if again, err := l.DataLocation(ctx, e.cfg.Datasets[0]); err != nil || again != got {
		t.Fatalf("after Forget: %q, %v", again, err)
	}
	missing := config.Dataset{Name: "ghost", Table: "demo.ghost"}
	if _, err := l.DataLocation(ctx, missing); err == nil {
		t.Fatal("a table that does not exist has a data location")
	}
}
