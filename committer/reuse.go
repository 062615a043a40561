package committer

import (
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/walfile"
)

const (
	// reuseFor is how long the table a commit returned stands in for a
	// load. It bounds how late a change that no commit requirement or
	// identity check sees (a table property, another engine's expiry) is
	// taken into account.
	reuseFor = 5 * time.Minute
	// sharedFor is how long a dataset loads its table at every append
	// after an append on a reused table conflicted: another writer is
	// appending to the table, and a reused table would conflict each time.
	sharedFor = 10 * time.Minute
)

// reused keeps, per dataset, the table that the committer's last commit
// to it returned: the catalog's table as the commit left it. The next
// append starts from it instead of loading the table again, which at a
// few hundred kept snapshots is a read and a parse of a metadata.json of
// several hundred KB, most of what a commit costs the committer (the
// catalog's commit reads and parses it once more, and that stays).
//
// What changes the table between the two commits is seen where it
// matters:
//   - another append, a replace (another engine's compaction or manifest
//     rewrite) or a recreated table changes the branch's snapshot or the
//     table's UUID, which every append asserts: the commit conflicts, and
//     the conflict's reload is what the retry starts from;
//   - a new schema or spec is seen by the consumer first, and its segments
//     name it: a batch written for a schema, spec or table the reused
//     table does not know is described on a loaded table (knows);
//   - expiry and property changes do not make an append wrong: the
//     catalog applies the append's changes to the table as it is.
//
// A failed or unknown commit leaves nothing here: the next pass loads the
// table, and its "in the table" check is made on what the catalog holds.
// A crash loses only this memory.
type reused struct {
	mu     sync.Mutex
	tables map[string]reusedTable
	// shared holds when each dataset found another writer appending.
	shared map[string]time.Time
}

type reusedTable struct {
	tbl *table.Table
	at  time.Time
}

// take removes and returns the dataset's kept table if it is younger
// than reuseFor and the dataset is not shared, else nil.
func (r *reused) take(dataset string, now time.Time) *table.Table {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.tables[dataset]
	delete(r.tables, dataset)
	if !ok || now.Sub(k.at) >= reuseFor || now.Sub(r.shared[dataset]) < sharedFor {
		return nil
	}
	return k.tbl
}

// keep records tbl, as a commit returned it at now, for the next append.
func (r *reused) keep(dataset string, tbl *table.Table, now time.Time) {
	if tbl == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tables == nil {
		r.tables = map[string]reusedTable{}
	}
	r.tables[dataset] = reusedTable{tbl: tbl, at: now}
}

// conflicted notes that an append on a reused table of dataset
// conflicted at now: the next appends load the table (sharedFor).
func (r *reused) conflicted(dataset string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared == nil {
		r.shared = map[string]time.Time{}
	}
	r.shared[dataset] = now
}

// forget drops every kept table: they belong to a catalog being closed.
func (r *reused) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables = nil
}

// knows reports whether tbl is the table every segment was written for,
// with the schema and the partition spec each was written with, so that
// the segments are described on it exactly as on a loaded table. A
// segment whose footer cannot be read counts as known: it is left out of
// the append either way.
func knows(tbl *table.Table, pending []*segment) bool {
	uuid := tbl.Metadata().TableUUID().String()
	for _, s := range pending {
		if err := s.readFooter(); err != nil {
			continue
		}
		id, err := identityOf(s.ready.Name.String(), s.footer)
		if err != nil {
			continue
		}
		if id.UUID != uuid || !hasSchema(tbl, id) || !hasSpec(tbl, id) {
			return false
		}
	}
	return true
}

func hasSchema(tbl *table.Table, id walfile.TableIdentity) bool {
	for _, s := range tbl.Metadata().Schemas() {
		if s.ID == id.SchemaID {
			return true
		}
	}
	return false
}

func hasSpec(tbl *table.Table, id walfile.TableIdentity) bool {
	for _, s := range tbl.Metadata().PartitionSpecs() {
		if s.ID() == id.SpecID {
			return true
		}
	}
	return false
}
