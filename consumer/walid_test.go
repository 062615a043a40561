package consumer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestRecoveryRefusesWithoutWALID is the probe ".wal-id emptied (or
// deleted) before a restart": the ready files' offsets were committed
// under the old id, so a new id would make recovery delete them as
// uncommitted while Kafka has moved past their rows. Recovery refuses,
// names the file, and deletes nothing; with the id restored it keeps them.
func TestRecoveryRefusesWithoutWALID(t *testing.T) {
	for _, damage := range []string{"empty", "missing"} {
		t.Run(damage, func(t *testing.T) {
			ctx := context.Background()
			e := newRecoveryEnv(t, nil)
			id, err := walfile.WALID(e.dir)
			if err != nil {
				t.Fatal(err)
			}
			a := e.segmentFile(t, 0, 0, 9)
			b := e.segmentFile(t, 1, 0, 9)
			resp, err := kadm.NewClient(e.cl).CommitOffsets(ctx, e.ds.ConsumerGroup, kadm.Offsets{e.ds.Topic: {
				0: {Topic: e.ds.Topic, Partition: 0, At: 10, LeaderEpoch: -1, Metadata: walfile.Ledger{}.With(id, 10)},
				1: {Topic: e.ds.Topic, Partition: 1, At: 10, LeaderEpoch: -1, Metadata: walfile.Ledger{}.With(id, 10)},
			}})
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatal(err)
			}
			idPath := filepath.Join(e.dir, walfile.IDFile)
			if damage == "empty" {
				err = os.WriteFile(idPath, nil, 0o644)
			} else {
				err = os.Remove(idPath)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger())
			var ie *walfile.IDError
			if !errors.As(err, &ie) || ie.Path != idPath {
				t.Fatalf("recovery with the id %s: %v, want a refusal naming %s", damage, err, idPath)
			}
			if !exists(e.dir, a) || !exists(e.dir, b) {
				t.Fatal("recovery deleted committed ready files while refusing")
			}
			if b, _ := os.ReadFile(idPath); len(b) != 0 {
				t.Fatalf("a new id %q was written over the lost one", b)
			}
			// The operator restores the id: the files are kept for the
			// uploader and the committer.
			if err := os.WriteFile(idPath, []byte(id+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger()); err != nil {
				t.Fatal(err)
			}
			if !exists(e.dir, a) || !exists(e.dir, b) {
				t.Fatal("recovery deleted committed ready files after the id was restored")
			}
		})
	}
}
