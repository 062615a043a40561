package maintainer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/tables"
)

const (
	// DefaultMaxSnapshotAge is how long a snapshot is kept when the table
	// sets no history.expire.max-snapshot-age-ms: an hour, 180 snapshots at
	// the default 20 s commit interval, a few hundred KB of metadata.json.
	DefaultMaxSnapshotAge = time.Hour
	// DefaultMinSnapshotsToKeep is how many snapshots are kept whatever
	// their age when the table sets no history.expire.min-snapshots-to-keep.
	DefaultMinSnapshotsToKeep = 10
	// maxAttempts bounds the commits of one step in one pass when the
	// committer keeps changing the table first.
	maxAttempts = 4
	// minPassTimeout bounds one pass over a table.
	minPassTimeout = 5 * time.Minute
)

// Maintainer keeps the datasets' tables healthy; see the package doc.
type Maintainer struct {
	cfg      *config.Config
	dir      string // the WAL directory, where compaction leaves its hand-offs
	log      *slog.Logger
	metrics  *metrics
	interval time.Duration
	now      func() time.Time
	// maxSnapshotAge is DefaultMaxSnapshotAge; tests shorten it, since
	// iceberg-go's expiry reads the real clock.
	maxSnapshotAge time.Duration
	// beforeCommit, when set, runs before each catalog commit; tests use
	// it to make the committer append at that moment.
	beforeCommit func(attempt int)
	// orphanAge is maintenance.orphanAgeHours (0: no orphan cleanup);
	// orphanInterval is DefaultOrphanInterval, tests shorten both.
	orphanAge      time.Duration
	orphanInterval time.Duration

	mu  sync.Mutex
	cat catalog.Catalog
	// lease tells which tables this pod's maintainer upkeeps (lease.go);
	// nil, as in tests that call pass, is every table.
	lease *leases

	state       passState            // the last outcome of each step, for Status
	lastOrphans map[string]time.Time // dataset -> last orphan cleanup, under mu
}

// New builds the maintainer of cfg's datasets. It connects to nothing yet.
func New(cfg *config.Config, opts role.Options) (*Maintainer, error) {
	opts = opts.Defaults()
	if cfg.Ingestion.WAL.Dir == "" {
		return nil, errors.New("maintainer: no WAL directory")
	}
	if cfg.MaintenanceInterval() <= 0 {
		return nil, fmt.Errorf("maintainer: maintenance interval %s is not positive", cfg.MaintenanceInterval())
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	for _, d := range cfg.Datasets {
		m.initDataset(d.Name)
	}
	return &Maintainer{
		cfg:      cfg,
		dir:      cfg.Ingestion.WAL.Dir,
		log:      opts.Logger,
		metrics:  m,
		interval: cfg.MaintenanceInterval(),
		now:      time.Now,

		maxSnapshotAge: DefaultMaxSnapshotAge,
		orphanAge:      time.Duration(cfg.Maintenance.OrphanAgeHours * float64(time.Hour)),
		orphanInterval: DefaultOrphanInterval,
	}, nil
}

// Run upkeeps every dataset's table once per interval until ctx is
// cancelled. Upkeep's only local state is the compaction's hand-off
// notes, each complete once written, so the drain is only the end of the
// pass under way: a step cut short commits nothing.
func (m *Maintainer) Run(ctx context.Context) error {
	defer m.closeCatalog()
	l, err := newLeases(m.cfg, m.log)
	if err != nil {
		return err
	}
	m.lease = l
	// Leaving the groups last, once no pass runs: another pod takes the
	// tables over at once.
	defer l.close()
	m.log.Info("maintainer started", "interval", m.interval.String(), "datasets", len(m.cfg.Datasets))
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		m.pass(ctx)
		select {
		case <-ctx.Done():
			m.log.Info("maintainer stopped")
			return nil
		case <-tick.C:
		case <-l.gainedC():
			// A table's lease just came to this pod (its owner left or
			// died): upkeep it now, not up to an interval later.
		}
	}
}

// pass upkeeps each dataset's table, side by side, so that one slow table
// does not hold up another's.
func (m *Maintainer) pass(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(minPassTimeout, 3*m.interval))
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range m.cfg.Datasets {
		wg.Go(func() { m.upkeep(ctx, d) })
	}
	wg.Wait()
}

// catalog opens the catalog on first use; a failure is retried at the
// next pass.
func (m *Maintainer) catalog(ctx context.Context) (catalog.Catalog, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cat != nil {
		return m.cat, nil
	}
	cat, err := tables.OpenCatalog(ctx, m.cfg.Catalog)
	if err != nil {
		return nil, err
	}
	m.cat = cat
	return cat, nil
}

func (m *Maintainer) closeCatalog() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cl, ok := m.cat.(catalog.Closer); ok {
		if err := cl.Close(); err != nil {
			m.log.Warn("close catalog", "err", err)
		}
	}
	m.cat = nil
}

// fail counts and records a failed step; a cancelled pass is not an error.
func (m *Maintainer) fail(ctx context.Context, log *slog.Logger, dataset, step string, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	m.metrics.failures.WithLabelValues(dataset, step).Inc()
	log.Error("upkeep step failed; the next pass tries again", "step", step, "err", err)
	m.state.note(m.cfg, dataset, step, m.now(), err)
}

// done records a step that finished without error.
func (m *Maintainer) done(dataset, step string) {
	m.metrics.lastRun.WithLabelValues(dataset, step).Set(float64(m.now().UnixNano()) / 1e9)
	m.state.note(m.cfg, dataset, step, m.now(), nil)
}
