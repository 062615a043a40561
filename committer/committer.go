package committer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/kafkaclient"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

const (
	// maxAttempts bounds the commits of one batch in one interval when
	// other writers keep changing the table first.
	maxAttempts = 8
	// jitterFraction is the most a process shifts the commit interval by.
	jitterFraction = 0.05
	// minPassTimeout bounds one pass over the datasets, so that a hung
	// catalog call is abandoned (its outcome unknown) and retried.
	minPassTimeout = time.Minute
	// lockPoll is how often the drain checks the other roles' locks.
	lockPoll = 50 * time.Millisecond
)

// Committer adds uploaded WAL segments to their tables; see the package doc.
type Committer struct {
	cfg      *config.Config
	dir      string
	log      *slog.Logger
	metrics  *metrics
	interval time.Duration
	// upsertWaiting is when each upsert segment waiting for another WAL
	// directory's rows was first held (upsert.go).
	upsertWaiting map[uuid.UUID]time.Time
	// store is where the uploader puts the segments' objects, which each
	// append checks first (objects.go); orphanAge is
	// maintenance.orphanAgeHours, the age past which the maintainer's
	// cleanup deletes an object no metadata names (0: no cleanup).
	store     storage.Store
	orphanAge time.Duration

	mu  sync.Mutex
	cat catalog.Catalog // opened at the first pass that needs it
	adm *kadm.Client
	// recreatedSeen holds the table UUIDs already logged as recreated;
	// mismatchSeen the segments already logged as written for another
	// table.
	recreatedSeen map[string]bool
	mismatchSeen  map[uuid.UUID]bool

	// beforeCommit, when set, runs before each catalog commit; tests use it
	// to make another writer change the table at that moment.
	beforeCommit func(ctx context.Context, dataset string, attempt int)

	lastErrors commitErrors // the last failure of each dataset, for Status

	// reuse keeps the table each dataset's last commit returned, which
	// its next append starts from (reuse.go).
	reuse reused

	// lastHandoff is when each dataset last applied hand-offs without an
	// append (an idle dataset's compactions still go in), by index.
	lastHandoff []time.Time
}

// New builds the committer of cfg's datasets. It connects to nothing yet.
func New(cfg *config.Config, opts role.Options) (*Committer, error) {
	opts = opts.Defaults()
	if cfg.Ingestion.WAL.Dir == "" {
		return nil, errors.New("committer: no WAL directory")
	}
	if cfg.CommitInterval() <= 0 {
		return nil, fmt.Errorf("committer: commit interval %s is not positive", cfg.CommitInterval())
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	for _, d := range cfg.Datasets {
		m.initDataset(d.Name)
	}
	host, _ := os.Hostname()
	return &Committer{
		upsertWaiting: map[uuid.UUID]time.Time{},
		cfg:           cfg,
		dir:           cfg.Ingestion.WAL.Dir,
		log:           opts.Logger, // the process's logger names the role
		metrics:       m,
		interval:      jittered(cfg.CommitInterval(), host+"/"+strconv.Itoa(os.Getpid())),

		store:     storage.Open(cfg.Catalog.Properties),
		orphanAge: time.Duration(cfg.Maintenance.OrphanAgeHours * float64(time.Hour)),

		lastHandoff: make([]time.Time, len(cfg.Datasets)),
	}, nil
}

// jittered shifts d by up to ±jitterFraction, by an amount fixed for one
// process (a hash of seed), so that pods started together drift apart.
func jittered(d time.Duration, seed string) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(seed))
	f := float64(h.Sum64()%2001)/1000 - 1 // in [-1, 1]
	return time.Duration(float64(d) * (1 + f*jitterFraction))
}

// Run commits at every interval until ctx is cancelled, then drains: it
// waits for the consumer and the uploader to finish, commits everything
// uploaded and returns nil, all within the drain timeout.
func (c *Committer) Run(ctx context.Context) error {
	lock, err := walfile.AcquireLock(c.dir, role.Committer)
	if err != nil {
		return err
	}
	defer lock.Release()
	closeKafka, err := c.connect()
	if err != nil {
		return err
	}
	defer closeKafka()
	defer c.closeCatalog()
	// The object checks' idle connections to the store.
	defer func() {
		if cl, ok := c.store.(interface{ CloseIdleConnections() }); ok {
			cl.CloseIdleConnections()
		}
	}()

	poll := pollEvery(c.interval)
	c.log.Info("committer started", "interval", c.interval.String(), "poll", poll.String(), "datasets", len(c.cfg.Datasets))
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last := make([]time.Time, len(c.cfg.Datasets)) // when each dataset's last append began
	for {
		select {
		case <-ctx.Done():
			return c.drain(ctx)
		case now := <-tick.C:
			c.passDue(ctx, last, now)
		}
	}
}

// pollEvery is how often Run looks for datasets due a commit: a tenth of
// the interval, between 100 ms and 1 s.
func pollEvery(interval time.Duration) time.Duration {
	return min(max(interval/10, 100*time.Millisecond), time.Second)
}

// settleTime is how long a commit waits, once due, for the uploads of
// files that rotated together with those already uploaded: a quarter of
// the interval, at most 5 s.
func settleTime(interval time.Duration) time.Duration {
	return min(interval/4, 5*time.Second)
}

// passDue commits each dataset whose last append began at least an
// interval ago and that has a settled batch of uploaded files. A dataset
// thus appends at most once per interval, but a batch that arrives after
// a quiet spell is committed as soon as it is uploaded instead of waiting
// for the next tick of a fixed clock: at a file age of 30 s and a 10 s
// interval that takes up to 10 s off the freshness of the first rows.
// last is updated for the datasets that tried an append, whatever its
// outcome, so an unreachable catalog is retried once per interval.
//
// With last nil, every dataset commits what it has, without settling.
// Datasets run side by side, so that one dataset's slow or failing
// catalog does not hold up another's.
func (c *Committer) passDue(ctx context.Context, last []time.Time, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, max(minPassTimeout, 3*c.interval))
	defer cancel()
	var settle time.Duration
	if last != nil {
		settle = settleTime(c.interval)
	}
	var wg sync.WaitGroup
	for i, d := range c.cfg.Datasets {
		if last != nil && !last[i].IsZero() && now.Sub(last[i]) < c.interval {
			continue
		}
		wg.Go(func() {
			tried, after := c.commitDataset(ctx, d, settle, now)
			if tried && last != nil {
				last[i] = now
			}
			// The maintainer's compactions go in after the append, on
			// the table it left (tables.ApplyHandoff), at most once an
			// interval.
			if tried || last == nil || now.Sub(c.lastHandoff[i]) >= c.interval {
				c.lastHandoff[i] = now
				after = c.applyHandoffs(ctx, c.log.With("dataset", d.Name, "topic", d.Topic), d, after)
			}
			// The next append starts from the table as these commits
			// left it; nil (a failure) leaves nothing to reuse.
			c.reuse.keep(d.Name, after, time.Now())
		})
	}
	wg.Wait()
}

// connect creates the Kafka admin client that reads committed offsets; it
// dials lazily, at the first request.
func (c *Committer) connect() (func(), error) {
	opts, err := kafkaclient.Opts(c.cfg.Kafka)
	if err != nil {
		return nil, err
	}
	kcl, err := kgo.NewClient(append(opts, kafkaclient.Logger(c.log))...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	c.adm = kadm.NewClient(kcl)
	return kcl.Close, nil
}

// drain is the committer's shutdown step. The consumer rotates its segments
// and commits their offsets, the uploader uploads them, and only then can
// their files be committed: each holds its lock until it has finished, so
// the committer waits for both locks to be free, then commits once. All of
// it is bounded by the drain timeout counted from the cancellation; what
// is left then is finished by the next start.
func (c *Committer) drain(parent context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), c.cfg.DrainTimeout())
	defer cancel()
	c.log.Info("committer draining: waiting for the consumer and the uploader")
	for walfile.Held(c.dir, role.Consumer) || walfile.Held(c.dir, role.Uploader) {
		select {
		case <-ctx.Done():
			c.log.Warn("drain timeout before the consumer and uploader finished; the next start commits the rest")
			return nil
		case <-time.After(lockPoll):
		}
	}
	c.pass(ctx)
	c.log.Info("committer drained")
	return nil
}

// pass commits every dataset once, now, without settling: the drain's
// last pass.
func (c *Committer) pass(ctx context.Context) { c.passDue(ctx, nil, time.Now()) }

// catalog opens the catalog on first use; a failure is retried at the
// next pass.
func (c *Committer) catalog(ctx context.Context) (catalog.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat != nil {
		return c.cat, nil
	}
	cat, err := tables.OpenCatalog(ctx, c.cfg.Catalog)
	if err != nil {
		return nil, err
	}
	c.cat = cat
	return cat, nil
}

func (c *Committer) closeCatalog() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cat.(catalog.Closer); ok {
		if err := cl.Close(); err != nil {
			c.log.Warn("close catalog", "err", err)
		}
	}
	c.cat = nil
	c.reuse.forget()
}

// commitDataset adds the dataset's uploaded segments to its table in one
// append and deletes their local files. With settle > 0 it waits (returns
// false, to be asked again) while some of the dataset's ready files are
// not uploaded yet and the oldest upload is younger than settle, or while
// uploaded files wait for their offset commit and the oldest upload is
// younger than an interval, so that files that rotated together are
// committed together; now is the time those ages count to. It reports
// whether it tried an append, and the table after the append when one
// landed.
func (c *Committer) commitDataset(ctx context.Context, d config.Dataset, settle time.Duration, now time.Time) (tried bool, after *table.Table) {
	log := c.log.With("dataset", d.Name, "topic", d.Topic)
	fail := func(reason, msg string, err error) {
		c.metrics.failures.WithLabelValues(d.Name, reason).Inc()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return
		}
		log.Error(msg, "reason", reason, "err", err)
		c.noteFailure(d.Name, reason, msg, err)
	}
	pending, unuploaded, err := c.collect(d)
	if err != nil {
		fail(reasonError, "list wal dir", err)
		return true, nil
	}
	if len(pending) == 0 {
		c.metrics.waiting.WithLabelValues(d.Name).Set(0)
		return false, nil
	}
	if settle > 0 && unuploaded > 0 && !uploadedBefore(pending, now.Add(-settle)) {
		return false, nil
	}
	// Offsets first: they are cheap to fetch, and a due batch may wait
	// for them without loading the table at every poll.
	keep, waiting, err := c.offsetsCommitted(ctx, d, pending)
	if err != nil {
		fail(reasonError, "fetch committed offsets", err)
		return true, nil
	}
	// The consumer commits the offsets of a rotation once all its files
	// are closed, which for hundreds of segments takes seconds, and their
	// uploads can be quicker: wait for the commit until the batch's oldest
	// upload is an interval old, then leave the files without one to the
	// next interval.
	if settle > 0 && len(waiting) > 0 && !uploadedBefore(pending, now.Add(-c.interval)) {
		return false, nil
	}
	cat, err := c.catalog(ctx)
	if err != nil {
		fail(reasonError, "open catalog", err)
		return true, nil
	}
	// The table the last commit returned, when every segment of the batch
	// was written for a schema and spec it knows (reuse.go), else the
	// catalog's. A crash here or anywhere below loses only that memory.
	source := tableReused
	tbl := c.reuse.take(d.Name, time.Now())
	if tbl == nil || !knows(tbl, pending) {
		source = tableLoaded
		if tbl, err = tables.Load(ctx, cat, d); err != nil {
			fail(reasonError, "load table", err)
			return true, nil
		}
	}
	c.metrics.tableLoads.WithLabelValues(d.Name, source).Inc()
	// Every segment the table holds already goes, whatever its offsets say.
	if pending, err = c.dropInTable(ctx, log, d, tbl, pending); err != nil {
		fail(reasonError, "check which segments the table holds", err)
		return true, nil
	}
	past := map[uuid.UUID]bool{} // offset committed past the file
	for _, s := range keep {
		past[s.ready.UUID] = true
	}
	pending = slices.DeleteFunc(pending, func(s *segment) bool {
		if !past[s.ready.UUID] {
			log.Warn("segment not added: no committed offset past it", "partition", s.ready.Partition,
				"file", s.ready.Name.String(), "end", s.ready.End, "committed", s.committed)
			return true
		}
		return false
	})
	// The objects last, right before the append: until it lands no
	// metadata names them, and the orphan cleanup deletes any older than
	// maintenance.orphanAgeHours. One missing, of the wrong size, or past
	// half that age goes back to the uploader, which uploads it again
	// from the local ready file (objects.go); the rest are appended, and
	// the append ends (its outcome then unknown, decided by the next
	// pass) before any of them is old enough for the cleanup. So the
	// record path does not depend on the margin, however long the
	// committer was down.
	checked := time.Now()
	if pending, err = c.checkObjects(ctx, log, d, pending, checked); err != nil {
		fail(reasonError, "check the uploaded objects", err)
		return true, nil
	}
	if bound := c.appendBound(checked); !bound.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, bound)
		defer cancel()
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		// At every attempt, on the table as loaded for it: a conflict's
		// reload may find it recreated.
		if err := c.checkIdentities(log, d, tbl, pending); err != nil {
			fail(reasonIdentity, "check the table the segments were written for", err)
			return true, nil
		}
		files, ids, rows, ok := c.dataFiles(log, tbl, pending)
		if !ok && attempt == 1 {
			// Some files could not be described; they stay on disk, the
			// others go ahead.
			c.metrics.failures.WithLabelValues(d.Name, reasonError).Inc()
		}
		if len(files) == 0 {
			return true, nil
		}
		batch := pending[:0:0]
		for _, s := range pending {
			if ids[s.ready.UUID] {
				batch = append(batch, s)
			}
		}
		if d.Upsert != nil {
			if files, batch, rows = c.inOffsetOrder(log, d, tbl, files, batch); len(batch) == 0 {
				return true, nil
			}
		}
		start := time.Now()
		next, deletesTook, err := c.append(ctx, d, tbl, files, batch, attempt)
		c.metrics.commitSeconds.Observe(time.Since(start).Seconds())
		switch {
		case err == nil:
			failpoint.Hit(failpoint.CommitterAfterAppend)
			c.metrics.commits.WithLabelValues(d.Name).Inc()
			c.metrics.files.WithLabelValues(d.Name).Add(float64(len(batch)))
			c.metrics.rows.WithLabelValues(d.Name).Add(float64(rows))
			c.metrics.lastCommit.WithLabelValues(d.Name).SetToCurrentTime()
			var snap int64
			if s := next.CurrentSnapshot(); s != nil {
				snap = s.SnapshotID
			}
			attrs := []any{"files", len(batch), "rows", rows, "snapshot", snap,
				"attempts", attempt, "duration_ms", time.Since(start).Milliseconds()}
			if d.Upsert != nil {
				// Of duration_ms: reading the batch's keys and writing
				// its delete files.
				attrs = append(attrs, "deletes_ms", deletesTook.Milliseconds())
			}
			log.Info("committed", attrs...)
			c.removeLocal(log, batch)
			failpoint.Hit(failpoint.CommitterAfterDataset)
			return true, next
		case errors.Is(err, errNotCommitted):
			fail(reasonError, "prepare append", err)
			return true, nil
		case tables.IsConflict(err) && attempt < maxAttempts && ctx.Err() == nil:
			c.metrics.failures.WithLabelValues(d.Name, reasonConflict).Inc()
			if source == tableReused && attempt == 1 {
				// Another writer appends to this table: reusing would
				// conflict at every append; load for a while.
				c.reuse.conflicted(d.Name, time.Now())
			}
			log.Info("commit conflict, reloading the table", "attempt", attempt, "err", err)
			if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
				fail(reasonError, "reload table after a conflict", err)
				return true, nil
			}
			// The reloaded table may hold some of the batch already:
			// only a crash or an unknown outcome before could do that,
			// but the check is what keeps an append exactly once.
			if pending, err = c.dropInTable(ctx, log, d, tbl, pending); err != nil {
				fail(reasonError, "check which segments the reloaded table holds", err)
				return true, nil
			}
			backoff(ctx, attempt)
		case tables.IsConflict(err):
			fail(reasonConflict, "commit conflicts persist; retrying at the next interval", err)
			return true, nil
		default:
			// The catalog may have applied the append. Nothing is deleted:
			// the next pass reloads the table, and SegmentsInTable tells
			// whether these segments are in it.
			fail(reasonUnknown, "commit outcome unknown; the next interval checks the table", err)
			return true, nil
		}
	}
	return true, nil
}

// errNotCommitted marks an error before the catalog commit: nothing changed.
var errNotCommitted = errors.New("append not committed")

// append adds files to tbl in one snapshot that records the batch's
// segment UUIDs, and returns the table after the commit and, for an
// upsert dataset, how long its delete files took.
func (c *Committer) append(ctx context.Context, d config.Dataset, tbl *table.Table, files []iceberg.DataFile, batch []*segment, attempt int) (*table.Table, time.Duration, error) {
	ids := make([]uuid.UUID, len(batch))
	for i, s := range batch {
		ids[i] = s.ready.UUID
	}
	var deletesTook time.Duration
	tx := tbl.NewTransaction()
	// The ledger property goes in the same commit as the files: a crash
	// right after the commit finds both, one before finds neither.
	ledger, err := c.ledger(tbl, d.Topic, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errNotCommitted, err)
	}
	if err := tx.SetProperties(ledger); err != nil {
		return nil, 0, fmt.Errorf("%w: set ledger property: %w", errNotCommitted, err)
	}
	if d.Upsert != nil {
		// The data files and their delete files in one snapshot (upsert.go).
		order, err := c.orderProperty(c.log.With("dataset", d.Name), d, tbl, batch)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errNotCommitted, err)
		}
		if err := tx.SetProperties(order); err != nil {
			return nil, 0, fmt.Errorf("%w: set upsert offsets: %w", errNotCommitted, err)
		}
		t0 := time.Now()
		dels, err := c.upsertDeletes(ctx, d, tbl, files, batch)
		deletesTook = time.Since(t0)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: upsert deletes: %w", errNotCommitted, err)
		}
		if err := tx.NewRowDelta(tables.SnapshotProperties(d.Name, ids)).AddRows(files...).AddDeletes(dels...).Commit(ctx); err != nil {
			return nil, 0, fmt.Errorf("%w: row delta: %w", errNotCommitted, err)
		}
	} else if err := tx.AddDataFiles(ctx, files, tables.SnapshotProperties(d.Name, ids), table.WithoutDuplicateCheck()); err != nil {
		// The duplicate check of AddDataFiles reads every manifest of the
		// table; SegmentsInTable is the exact and cheap check instead.
		return nil, 0, fmt.Errorf("%w: add data files: %w", errNotCommitted, err)
	}
	if c.beforeCommit != nil {
		c.beforeCommit(ctx, d.Name, attempt)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("commit %d files to %s: %w", len(files), d.Table, err)
	}
	return next, deletesTook, nil
}

func backoff(ctx context.Context, attempt int) {
	d := time.Duration(attempt*attempt) * 20 * time.Millisecond
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// dataFiles describes the segments for tbl, whose identity
// checkIdentities accepted. A segment that cannot be described is logged
// and left out (ok is false); its files stay.
func (c *Committer) dataFiles(log *slog.Logger, tbl *table.Table, pending []*segment) (files []iceberg.DataFile, ids map[uuid.UUID]bool, rows int64, ok bool) {
	ids = map[uuid.UUID]bool{}
	ok = true
	for _, s := range pending {
		df, err := s.dataFile(tbl)
		if err != nil {
			log.Error("segment left out of the append", "file", s.ready.Name.String(), "partition", s.ready.Partition, "err", err)
			ok = false
			continue
		}
		files = append(files, df)
		ids[s.ready.UUID] = true
		rows += s.footer.NumRows
		// The data file holds what the append needs; a footer of a wide
		// file with many row groups is far larger, and a batch can have
		// thousands. A retry reads it again.
		s.footer = nil
	}
	return files, ids, rows, ok
}

// removeLocal deletes the segments' local files once their data is in the
// table: the ready file first, then its marker, then an fsync of the
// directory. Dying between the two deletions leaves a marker without its
// ready file, which collect deletes; dying before either leaves both,
// which dropInTable deletes.
func (c *Committer) removeLocal(log *slog.Logger, segs []*segment) {
	for _, s := range segs {
		if err := walfile.Remove(s.ready.Path); err != nil {
			c.metrics.deleteFailures.WithLabelValues(c.datasetOf(s.ready.Topic)).Inc()
			log.Error("delete committed segment", "file", s.ready.Path, "err", err)
			continue
		}
		failpoint.Hit(failpoint.CommitterBetweenDeletes)
		if err := walfile.Remove(s.marker.Path); err != nil {
			c.metrics.deleteFailures.WithLabelValues(c.datasetOf(s.ready.Topic)).Inc()
			log.Error("delete marker of committed segment", "file", s.marker.Path, "err", err)
		}
		// The checksum record last; a crash before leaves a stray record
		// that the consumer's next start deletes.
		if err := walfile.Remove(filepath.Join(c.dir, walfile.SumName(s.ready.UUID))); err != nil {
			c.metrics.deleteFailures.WithLabelValues(c.datasetOf(s.ready.Topic)).Inc()
			log.Error("delete checksum record of committed segment", "file", walfile.SumName(s.ready.UUID), "err", err)
		}
	}
	if err := walfile.SyncDir(c.dir); err != nil {
		log.Error("sync wal dir after deletes", "err", err)
	}
}
