package committer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/shared/walfile"
)

// Reasons of a failed commit, the values of the reason label.
const (
	reasonConflict = "conflict" // another writer changed the table first; retried
	reasonUnknown  = "unknown"  // the catalog may or may not have applied the append
	reasonError    = "error"    // nothing was committed: catalog, Kafka or file error
	reasonIdentity = "identity" // appends stopped: segments written for another table (IdentityError)
)

// metrics are the committer's Prometheus metrics.
type metrics struct {
	commits       *prometheus.CounterVec
	failures      *prometheus.CounterVec
	files         *prometheus.CounterVec
	rows          *prometheus.CounterVec
	lastCommit    *prometheus.GaugeVec
	commitSeconds prometheus.Histogram
	waiting       *prometheus.GaugeVec
	// deleteFailures counts local files of committed segments that could
	// not be deleted (a read-only or immutable WAL directory): they are
	// deleted at a later pass, but meanwhile they hold the volume.
	deleteFailures *prometheus.CounterVec
	// quarantined counts files moved aside (walfile.Quarantine).
	quarantined *prometheus.CounterVec
	// identity counts segments left out because the table is not the one
	// they were written for (IdentityError).
	identity *prometheus.CounterVec
	// stopped is 1 while a dataset's appends are stopped by such a
	// segment.
	stopped *prometheus.GaugeVec
	// handoffs counts the groups of the maintainer's compaction hand-offs
	// by outcome (handoffApplied, handoffDropped); handoffFailures the
	// hand-offs whose replace could not be committed this time.
	handoffs        *prometheus.CounterVec
	handoffFailures *prometheus.CounterVec
	// tableLoads counts the table loads of the appends by source: loaded
	// from the catalog, or reused as the last commit returned it (reuse.go).
	tableLoads *prometheus.CounterVec
	// handedBack counts the segments whose markers were deleted before
	// their append so that the uploader uploads them again (objects.go),
	// by reason: handBackMissing, handBackSize, handBackAged.
	handedBack *prometheus.CounterVec
	// outOfOrder counts upsert segments appended after a later offset of
	// their Kafka partition was in the table (upsert.go).
	outOfOrder *prometheus.CounterVec
	// upsertWaiting is the upsert segments waiting for another WAL
	// directory's earlier rows of their partition (upsert.go).
	upsertWaiting *prometheus.GaugeVec
}

// Sources of an append's table, the values of the source label.
const (
	tableLoaded = "catalog" // loaded from the catalog
	tableReused = "reused"  // the table the dataset's last commit returned
)

// Outcomes of a hand-off's group, the values of the outcome label.
const (
	handoffApplied = "applied" // its replace is committed (by this process, or before a crash)
	handoffDropped = "dropped" // another writer replaced its files first; its file is an orphan
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_commits_total",
			Help: "Iceberg appends that succeeded.",
		}, []string{"dataset"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_commit_failures_total",
			Help: "Commit attempts that failed, by reason: conflict (retried), unknown (outcome unknown, decided at the next interval), error (nothing committed).",
		}, []string{"dataset", "reason"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_files_committed_total",
			Help: "WAL segments added to tables.",
		}, []string{"dataset"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_rows_committed_total",
			Help: "Rows added to tables.",
		}, []string{"dataset"}),
		lastCommit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_committer_last_commit_timestamp_seconds",
			Help: "Unix time of the last successful append.",
		}, []string{"dataset"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ingestor_committer_commit_seconds",
			Help:    "Duration of one catalog commit attempt.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_committer_files_waiting_offset_commit",
			Help: "Uploaded segments not added because Kafka has no committed offset past them.",
		}, []string{"dataset"}),
		deleteFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_delete_failures_total",
			Help: "Local files of committed segments (ready files and markers) that could not be deleted; retried at a later pass.",
		}, []string{"dataset"}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_files_quarantined_total",
			Help: "Files moved to the WAL directory's quarantine, by reason: bad_marker (the uploader uploads the segment again), object_missing (the table holds the segment but its object is gone: the ready file is the only copy of rows the table names).",
		}, []string{"dataset", "reason"}),
		identity: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_identity_mismatches_total",
			Help: "Segments not added because the table was recreated and a field id of the file names another column in it; each stops the dataset's appends.",
		}, []string{"dataset"}),
		stopped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_committer_appends_stopped",
			Help: "1 while the dataset's appends are stopped: some of its segments were written for another table than the catalog holds now (see docs/operations.md, \"Table identity\").",
		}, []string{"dataset"}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_compactions_total",
			Help: "Compacted files of the maintainer's hand-offs, by outcome: applied (their replace committed after an append) or dropped (another writer replaced their files first; nothing lost, the file is left to the orphan cleanup).",
		}, []string{"dataset", "outcome"}),
		handoffFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_compaction_failures_total",
			Help: "Hand-offs of the maintainer whose replace could not be committed at this pass; retried at the next, appends unaffected.",
		}, []string{"dataset"}),
		tableLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_table_loads_total",
			Help: "Tables an append started from, by source: catalog (loaded) or reused (as the dataset's last commit returned it).",
		}, []string{"dataset", "source"}),
		handedBack: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_segments_handed_back_total",
			Help: "Uploaded segments handed back to the uploader before their append, by reason: missing (the object is not in the store), size (it is not the size the marker records), aged (it is older than half of maintenance.orphanAgeHours). The uploader uploads each again from the local ready file; no row is lost.",
		}, []string{"dataset", "reason"}),
		outOfOrder: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_committer_upsert_out_of_order_total",
			Help: "Segments of an upsert dataset appended after the table already held a later offset of their Kafka partition (another pod's WAL appended first after a rebalance): a key updated on both sides may show its older version.",
		}, []string{"dataset"}),
		upsertWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_committer_upsert_segments_waiting",
			Help: "Segments of an upsert dataset waiting, after a rebalance, for another WAL directory's earlier rows of their Kafka partition to be in the table.",
		}, []string{"dataset"}),
	}
	for _, c := range []prometheus.Collector{m.commits, m.failures, m.files, m.rows, m.lastCommit, m.commitSeconds, m.waiting, m.deleteFailures, m.quarantined, m.identity, m.stopped, m.handoffs, m.handoffFailures, m.tableLoads, m.handedBack, m.outOfOrder, m.upsertWaiting} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register committer metrics: %w", err)
		}
	}
	return m, nil
}

// initDataset makes every series of a dataset visible at zero.
func (m *metrics) initDataset(name string) {
	m.commits.WithLabelValues(name)
	m.files.WithLabelValues(name)
	m.rows.WithLabelValues(name)
	m.waiting.WithLabelValues(name)
	m.deleteFailures.WithLabelValues(name)
	m.quarantined.WithLabelValues(name, walfile.ReasonBadMarker)
	m.quarantined.WithLabelValues(name, walfile.ReasonObjectMissing)
	for _, r := range []string{handBackMissing, handBackSize, handBackAged} {
		m.handedBack.WithLabelValues(name, r)
	}
	m.identity.WithLabelValues(name)
	m.outOfOrder.WithLabelValues(name)
	m.upsertWaiting.WithLabelValues(name)
	m.stopped.WithLabelValues(name)
	m.handoffs.WithLabelValues(name, handoffApplied)
	m.handoffs.WithLabelValues(name, handoffDropped)
	m.handoffFailures.WithLabelValues(name)
	m.tableLoads.WithLabelValues(name, tableLoaded)
	m.tableLoads.WithLabelValues(name, tableReused)
	for _, r := range []string{reasonConflict, reasonUnknown, reasonError, reasonIdentity} {
		m.failures.WithLabelValues(name, r)
	}
}

// datasetOf returns the name of the dataset that reads topic, for the
// dataset label of a file's metric.
func (c *Committer) datasetOf(topic string) string {
	for _, d := range c.cfg.Datasets {
		if d.Topic == topic {
			return d.Name
		}
	}
	return ""
}
