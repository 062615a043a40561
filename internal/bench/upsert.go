package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// upsertBuckets is the number of buckets of the key that partition the
// table of an upsert run. A table with upserts may be partitioned by its
// key columns only; with 4 Kafka partitions, 16 buckets open as many
// segments as the append-only run's 64 tenants keyed by tenant (16 per
// Kafka partition).
const upsertBuckets = 16

// lwwKey is what Kafka holds last for one key: the seq of its last
// version, where that version is, and whether it deletes the key.
type lwwKey struct {
	seq     int64
	offset  int64
	part    int32
	set     bool
	deleted bool
}

// lwwLedger is the last-write-wins state of what was produced, built from
// the broker's acknowledgements: per key, the version at the highest
// offset of the key's Kafka partition. It is what the table must show.
type lwwLedger struct {
	plan *devenv.Upserts

	mu   sync.Mutex
	keys []lwwKey // by key, the seq of the event that inserted it
	// What was produced, by kind; tombstones are among the deletes.
	inserts, updates, deletes, tombstones int64
	// reordered counts versions that Kafka holds in another order than
	// the generator made them (seq): none with an idempotent producer.
	// split counts keys whose versions went to two Kafka partitions,
	// where last-write-wins has no meaning: none when the record key is
	// the row key.
	reordered, split int64
}

func newLWWLedger(plan *devenv.Upserts) *lwwLedger { return &lwwLedger{plan: plan} }

// acked records event seq, acknowledged at offset of Kafka partition
// part (devenv.Generator.Acked).
func (l *lwwLedger) acked(seq int64, part int32, offset int64) {
	key, op, tomb := l.plan.Plan(seq)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch op {
	case devenv.OpInsert:
		l.inserts++
	case devenv.OpUpdate:
		l.updates++
	case devenv.OpDelete:
		l.deletes++
		if tomb {
			l.tombstones++
		}
	}
	if int64(len(l.keys)) <= key {
		l.keys = append(l.keys, make([]lwwKey, key+1-int64(len(l.keys)))...)
	}
	k := &l.keys[key]
	switch {
	case !k.set:
	case k.part != part:
		l.split++
		return
	case offset < k.offset:
		if seq > k.seq {
			l.reordered++
		}
		return
	case seq < k.seq:
		l.reordered++
	}
	*k = lwwKey{seq: seq, offset: offset, part: part, set: true, deleted: op == devenv.OpDelete}
}

// liveKeys counts the keys whose last version is not a delete.
func (l *lwwLedger) liveKeys() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, k := range l.keys {
		if k.set && !k.deleted {
			n++
		}
	}
	return n
}

// upsertScore is what the scorer found in a table of upserts, read with
// its deletes applied.
type upsertScore struct {
	rows     int64 // rows the scan returned
	expected int64 // live keys of the ledger
	found    int64 // live keys found at least once
	missing  int64 // live keys not found
	// extra counts rows of keys that should have none: a deleted key
	// (resurrected), a key never produced, an id not of this run.
	extra int64
	// duplicated counts keys found more than once (once each).
	duplicated int64
	// stale counts rows of a live key whose version is not its last.
	stale       int64
	wrongTenant int64
	split       int64 // from the ledger: keys with no last write
	// Delete files in the current snapshot.
	eqDeleteFiles, posDeleteFiles int
	deletedRows                   int64 // rows the delete files hold
	scan                          time.Duration
}

// ok tells whether the table is the last-write-wins state.
func (s *upsertScore) ok() bool {
	return s.missing == 0 && s.extra == 0 && s.duplicated == 0 && s.stale == 0 && s.wrongTenant == 0 && s.split == 0
}

// scoreUpserts reads the whole table with iceberg-go's scan, which applies
// its equality and position deletes as any reader of the table must, and
// compares each row with the ledger: one row per live key, of its last
// version, and none of any other key. It reads every column, so that the
// scan is also the full scan a soak reports: a second one would double
// the scoring of a table of thousands of small files.
func scoreUpserts(ctx context.Context, tbl *table.Table, run uint32, l *lwwLedger, ten *devenv.Tenancy) (*upsertScore, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &upsertScore{split: l.split}
	for _, k := range l.keys {
		if k.set && !k.deleted {
			s.expected++
		}
	}
	var err error
	if s.eqDeleteFiles, s.posDeleteFiles, s.deletedRows, err = countDeleteFiles(ctx, tbl); err != nil {
		return nil, err
	}
	seen := make([]uint8, len(l.keys))
	if tbl.CurrentSnapshot() != nil {
		start := time.Now()
		scan := tbl.Scan()
		defer scan.Close()
		sc, batches, err := scan.ToArrowRecords(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan the table: %w", err)
		}
		cols := [3]int{}
		for i, name := range []string{devenv.ColumnID, devenv.ColumnTenant, devenv.ColumnVersion} {
			idx := sc.FieldIndices(name)
			if len(idx) != 1 {
				return nil, fmt.Errorf("the table's scan has no column %s", name)
			}
			cols[i] = idx[0]
		}
		for rec, err := range batches {
			if err != nil {
				return nil, fmt.Errorf("scan the table: %w", err)
			}
			ids, ok1 := rec.Column(cols[0]).(*array.String)
			tenants, ok2 := rec.Column(cols[1]).(*array.String)
			versions, ok3 := rec.Column(cols[2]).(*array.Int64)
			if !ok1 || !ok2 || !ok3 {
				rec.Release()
				return nil, fmt.Errorf("scan of the table: columns %s, %s, %s of types %s, %s, %s, want string, string, long",
					devenv.ColumnID, devenv.ColumnTenant, devenv.ColumnVersion,
					rec.Column(cols[0]).DataType(), rec.Column(cols[1]).DataType(), rec.Column(cols[2]).DataType())
			}
			for i := range ids.Len() {
				s.rows++
				r, key, ok := devenv.ParseEventID(ids.Value(i))
				if !ok || r != run || key >= int64(len(l.keys)) || !l.keys[key].set || l.keys[key].deleted {
					s.extra++
					continue
				}
				if seen[key]++; seen[key] == 2 {
					s.duplicated++
				}
				if seen[key] == 255 {
					seen[key] = 2 // counted; stay clear of wrapping round
				}
				if versions.IsNull(i) || versions.Value(i) != l.keys[key].seq {
					s.stale++
				}
				if tenants.Value(i) != ten.Name(ten.Of(key)) {
					s.wrongTenant++
				}
			}
			rec.Release()
		}
		s.scan = time.Since(start)
	}
	for key, k := range l.keys {
		if !k.set || k.deleted {
			continue
		}
		if seen[key] == 0 {
			s.missing++
		} else {
			s.found++
		}
	}
	return s, nil
}

// countDeleteFiles counts the equality- and position-delete files of the
// current snapshot and the rows they hold.
func countDeleteFiles(ctx context.Context, tbl *table.Table) (eq, pos int, rows int64, err error) {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return 0, 0, 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("table file io: %w", err)
	}
	manifests, err := cur.Manifests(fsys)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentEqDeletes:
				eq++
			case iceberg.EntryContentPosDeletes:
				pos++
			}
			rows += df.Count()
		}
	}
	return eq, pos, rows, nil
}

// UpsertResult is what an upsert run (--upserts) adds to the Result: what
// was produced, and how the table read with its deletes applied compares
// with the last-write-wins state of it.
type UpsertResult struct {
	// Ratio is the share of the events that update or delete an earlier
	// key; a tenth of those delete it.
	Ratio float64 `json:"ratio"`
	// Inserts, Updates and Deletes are the events produced of each kind;
	// Tombstones are the deletes sent as Kafka tombstones.
	Inserts    int64 `json:"inserts"`
	Updates    int64 `json:"updates"`
	Deletes    int64 `json:"deletes"`
	Tombstones int64 `json:"tombstones"`
	// LiveKeysExpected are the keys whose last version is not a delete;
	// LiveKeysFound those of them the table shows; LiveRows the rows its
	// scan returned.
	LiveKeysExpected int64 `json:"live_keys_expected"`
	LiveKeysFound    int64 `json:"live_keys_found"`
	LiveRows         int64 `json:"live_rows"`
	// What is wrong, when the table is not the last-write-wins state:
	// live keys missing, rows of keys that should have none (deleted,
	// never produced), keys shown more than once, rows of a live key
	// that are not its last version, rows with another tenant than their
	// key's, and keys whose versions Kafka put in two partitions.
	Missing     int64 `json:"missing"`
	Extra       int64 `json:"extra"`
	Duplicated  int64 `json:"duplicated"`
	Stale       int64 `json:"stale"`
	WrongTenant int64 `json:"wrong_tenant"`
	SplitKeys   int64 `json:"split_keys"`
	// Reordered counts versions Kafka holds in another order than they
	// were made; the table follows Kafka's, so it is not a failure.
	Reordered int64 `json:"reordered"`
	// LastWriteWins is true when the table is exactly that state.
	LastWriteWins bool `json:"last_write_wins"`
	// The delete files of the current snapshot and the rows they hold,
	// and the time of the scorer's full scan (every column) with them
	// applied.
	EqualityDeleteFiles int     `json:"equality_delete_files"`
	PositionDeleteFiles int     `json:"position_delete_files"`
	DeleteFileRows      int64   `json:"delete_file_rows"`
	FullScanSeconds     float64 `json:"full_scan_seconds"`
	// AppendOnly is a soak's full scan beside that of its live rows
	// written append-only (appendOnlyScan).
	AppendOnly *AppendOnlyScan `json:"append_only_scan,omitempty"`
}

// result is the score as the run reports it.
func (s *upsertScore) result(l *lwwLedger) *UpsertResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &UpsertResult{
		Ratio: l.plan.Ratio, Inserts: l.inserts, Updates: l.updates, Deletes: l.deletes, Tombstones: l.tombstones,
		LiveKeysExpected: s.expected, LiveKeysFound: s.found, LiveRows: s.rows,
		Missing: s.missing, Extra: s.extra, Duplicated: s.duplicated, Stale: s.stale,
		WrongTenant: s.wrongTenant, SplitKeys: s.split, Reordered: l.reordered, LastWriteWins: s.ok(),
		EqualityDeleteFiles: s.eqDeleteFiles, PositionDeleteFiles: s.posDeleteFiles, DeleteFileRows: s.deletedRows,
		FullScanSeconds: round(s.scan.Seconds(), 3),
	}
}

// committedRecords adds up the records the dataset's commits added, as
// their snapshots' summaries say: every record of an upsert run is a row
// of the file its commit adds, deletes and superseded versions included,
// so this reaches the events produced when all are in, whereas the
// table's total-records falls as upkeep applies the deletes. Snapshots
// that expiry removed are missed.
func committedRecords(tbl *table.Table) int64 {
	var n int64
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary == nil || snap.Summary.Properties[tables.SummaryDataset] != dataset {
			continue
		}
		added, _ := strconv.ParseInt(snap.Summary.Properties["added-records"], 10, 64)
		n += added
	}
	return n
}

// upsertPayload is the record of event seq of an upsert run: keyed by the
// row key (the event id of the key's insert), of the key's tenant, its
// value carrying the event's op and its seq as version, or no value at
// all for a delete sent as a tombstone.
func (b *runner) upsertPayload(seq int64, at time.Time, valueBytes *atomic.Int64) ([]byte, []byte, error) {
	key, _, tomb := b.lww.plan.Plan(seq)
	id := devenv.EventID(b.run, key)
	if tomb {
		return []byte(id), nil, nil
	}
	v, err := b.vals.Append(make([]byte, 0, 2304), id, b.ten.Name(b.ten.Of(key)), seq, at)
	if err != nil {
		return nil, nil, err
	}
	valueBytes.Add(int64(len(v)))
	return []byte(id), v, nil
}

// scoreUpserts scores the table of an upsert run against the ledger and
// makes the result say so: its exactly-once verdict becomes the
// last-write-wins one, and the counts of what went wrong are of keys.
func (b *runner) scoreUpserts(ctx context.Context, tbl *table.Table, r *Result) error {
	s, err := scoreUpserts(ctx, tbl, b.run, b.lww, b.ten)
	if err != nil {
		return err
	}
	r.Upserts = s.result(b.lww)
	r.ExactlyOnce = s.ok()
	r.Missing, r.Duplicated, r.Unexpected, r.WrongTenant = s.missing, s.duplicated, s.extra, s.wrongTenant
	if r.SoakResult != nil && len(r.Checkpoints) > 0 {
		// The last checkpoint left the full scan to the scorer's.
		last := &r.Checkpoints[len(r.Checkpoints)-1]
		last.FullScanRows, last.FullScanMs = s.rows, round(float64(s.scan.Microseconds())/1e3, 1)
		r.Health = last
	}
	if r.SoakResult != nil {
		a, err := appendOnlyScan(ctx, b.cat, tbl)
		if err != nil {
			return err
		}
		r.Upserts.AppendOnly = a
		b.say("upserts: full scan %.0f ms with the deletes applied; the same %d live rows written append-only (%d files) %.0f ms: %.2fx",
			a.UpsertScanMs, a.Rows, a.DataFiles, a.ScanMs, a.Ratio)
	}
	b.say("upserts: %d inserts, %d updates, %d deletes (%d tombstones); live keys expected %d, found %d in %d rows; %d missing, %d extra, %d duplicated, %d stale; %d equality- and %d position-delete files; full scan %.2fs",
		r.Upserts.Inserts, r.Upserts.Updates, r.Upserts.Deletes, r.Upserts.Tombstones, s.expected, s.found, s.rows,
		s.missing, s.extra, s.duplicated, s.stale, s.eqDeleteFiles, s.posDeleteFiles, s.scan.Seconds())
	return nil
}
