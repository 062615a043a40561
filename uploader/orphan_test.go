package uploader

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// TestOrphanObjects stores the objects of four segments that recovery
// deleted and checks what the sweep does with each note: objects of a due
// note deleted, an object the table refers to kept, a young note left
// alone, and a note whose ready file is still there left alone.
func TestOrphanObjects(t *testing.T) {
	e := newEnv(t, true)
	ctx := context.Background()
	d := e.cfg.Datasets[0] // clicks, with bloom filters on tenant and id
	cat, err := tables.OpenCatalog(ctx, e.cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	tbl, err := tables.Load(ctx, cat, d)
	if err != nil {
		t.Fatal(err)
	}
	loc := dataLocation(tbl)
	objects := func(id uuid.UUID) []string {
		out := []string{storage.Join(loc, id.String()+walfile.SegmentExt)}
		for _, col := range d.BloomFilterColumns {
			out = append(out, storage.Join(loc, bloom.SidecarName(id.String(), col)))
		}
		return out
	}
	put := func(id uuid.UUID) {
		for _, o := range objects(id) {
			if err := e.store.Put(ctx, o, bytes.NewReader([]byte("x")), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(o string) bool {
		rc, err := e.store.Get(ctx, o)
		if errors.Is(err, storage.ErrNotFound) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		return true
	}
	now := time.Now().UTC()
	note := func(id uuid.UUID, deleted time.Time, extra ...string) walfile.Orphan {
		n := walfile.Name{State: walfile.Ready, Topic: d.Topic, Partition: 0, Start: 1, End: 2, UUID: id}
		o := walfile.Orphan{Dataset: d.Name, Segment: n.String(), UUID: id, Written: deleted.Add(-time.Minute), Deleted: deleted, Objects: extra}
		if err := walfile.WriteOrphan(e.dir, o); err != nil {
			t.Fatal(err)
		}
		return o
	}

	due, inTable, young, stillThere := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for _, id := range []uuid.UUID{due, inTable, young, stillThere} {
		put(id)
	}
	// The due segment's marker had named an object elsewhere too.
	elsewhere := storage.Join(loc, "elsewhere", due.String()+walfile.SegmentExt)
	if err := e.store.Put(ctx, elsewhere, bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	note(due, now.Add(-2*time.Hour), elsewhere)
	note(inTable, now.Add(-2*time.Hour))
	note(young, now)
	o := note(stillThere, now.Add(-2*time.Hour))
	if err := os.WriteFile(filepath.Join(e.dir, o.Segment), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// With its checksum record, so that the uploader does not quarantine
	// the stand-in content (its upload fails at the bloom filters, and the
	// file stays where it is).
	if err := walfile.WriteSum(e.dir, stillThere, walfile.Sum{Size: 1, CRC32C: crc32.Checksum([]byte("x"), walfile.Castagnoli)}); err != nil {
		t.Fatal(err)
	}
	// A kept snapshot refers to inTable's object, as if the note were wrong.
	b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, objects(inTable)[0], iceberg.ParquetFile, map[int]any{}, nil, nil, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, []iceberg.DataFile{b.Build()}, tables.SnapshotProperties(d.Name, []uuid.UUID{inTable}), table.WithoutDuplicateCheck()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	u := e.newUploader(withOrphanTTL(time.Hour, 100*time.Millisecond))
	cancel, wait, _ := e.run(u)
	noteGone := func(id uuid.UUID) bool {
		_, err := os.Stat(filepath.Join(e.dir, walfile.OrphanName(id)))
		return errors.Is(err, os.ErrNotExist)
	}
	waitFor(t, 30*time.Second, func() bool { return noteGone(due) && noteGone(inTable) }, "the due notes to be swept")
	time.Sleep(300 * time.Millisecond) // a few more sweeps
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	for _, o := range append(objects(due), elsewhere) {
		if exists(o) {
			t.Errorf("orphan object %s not deleted", o)
		}
	}
	if !exists(objects(inTable)[0]) {
		t.Error("an object the table refers to was deleted")
	}
	for _, id := range []uuid.UUID{young, stillThere} {
		if noteGone(id) {
			t.Errorf("note of %s removed", id)
		}
		for _, o := range objects(id) {
			if !exists(o) {
				t.Errorf("object %s deleted before its time", o)
			}
		}
	}
	if got := e.metric("ingestor_uploader_orphan_objects_deleted_total", d.Name); got != 1 {
		t.Errorf("orphan objects deleted counter %v, want 1", got)
	}
}
