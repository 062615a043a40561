package maintainer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Steps of a pass, the values of the step label.
const (
	stepExpire    = "expire"
	stepManifests = "manifests"
	stepCompact   = "compact"
	stepLoad      = "load"
	stepOrphans   = "orphans"
	stepMetadata  = "metadata"
)

// metrics are the maintainer's Prometheus metrics.
type metrics struct {
	runs          *prometheus.CounterVec
	failures      *prometheus.CounterVec
	lastRun       *prometheus.GaugeVec
	expired       *prometheus.CounterVec
	snapshots     *prometheus.GaugeVec
	metadataBytes *prometheus.GaugeVec
	manifests     *prometheus.GaugeVec
	dataFiles     *prometheus.GaugeVec
	smallFiles    *prometheus.GaugeVec
	// compactionsWaiting is the dataset's hand-off notes waiting for the
	// committer to commit their replace.
	compactionsWaiting *prometheus.GaugeVec
	rewrittenBytes     *prometheus.CounterVec
	rewrittenFiles     *prometheus.CounterVec
	orphanFiles        *prometheus.CounterVec
	orphanBytes        *prometheus.CounterVec
	// orphansKept is the old objects the orphan cleanup found unnamed at
	// first and kept, by reason (orphans.go).
	orphansKept *prometheus.CounterVec
	// expiredDeleted is the objects only expired snapshots referred to,
	// deleted after the expiry commit (deletes.go).
	expiredDeleted *prometheus.CounterVec
	leaseHeld      *prometheus.GaugeVec
	// metadataDeleted and metadataDeletedBytes are the old metadata.json
	// versions deleted (metadatafiles.go).
	metadataDeleted      *prometheus.CounterVec
	metadataDeletedBytes *prometheus.CounterVec
	// deletesApplied is the rows compaction left out of its files because
	// a delete removed them (deletedebt.go).
	deletesApplied *prometheus.CounterVec
	// deleteFiles, partitionDeleteFiles and deletedRows are the table's
	// delete debt after the last pass: its live delete files, the most
	// of them in one partition, and the rows (or keys) they delete.
	deleteFiles          *prometheus.GaugeVec
	partitionDeleteFiles *prometheus.GaugeVec
	deletedRows          *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_steps_total",
			Help: "Upkeep steps that committed a change or deleted files, by step: expire, manifests, compact, orphans, metadata.",
		}, []string{"dataset", "step"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_step_failures_total",
			Help: "Upkeep steps that failed (after their conflict retries), by step: load, expire, manifests, compact, orphans, metadata.",
		}, []string{"dataset", "step"}),
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_last_step_timestamp_seconds",
			Help: "Unix time the step last finished without error, whether or not it had work.",
		}, []string{"dataset", "step"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_snapshots_expired_total",
			Help: "Snapshots removed by expiry.",
		}, []string{"dataset"}),
		snapshots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_snapshots",
			Help: "Snapshots the table keeps, after the last pass.",
		}, []string{"dataset"}),
		metadataBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_metadata_bytes",
			Help: "Size of the table's current metadata.json, after the last pass.",
		}, []string{"dataset"}),
		manifests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_manifests",
			Help: "Data manifests in the table's current snapshot, after the last pass.",
		}, []string{"dataset"}),
		dataFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_data_files",
			Help: "Live data files in the table's current snapshot (its summary's total-data-files), after the last pass.",
		}, []string{"dataset"}),
		smallFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_small_files",
			Help: "Data files under half the target size that wait for compaction, after the last pass.",
		}, []string{"dataset"}),
		compactionsWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_compactions_waiting",
			Help: "Compaction hand-offs written and not yet committed by the committer, after the last pass; while one waits no new compaction is planned.",
		}, []string{"dataset"}),
		rewrittenBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_rewritten_bytes_total",
			Help: "Bytes of data files that compaction read and wrote again: divided by the bytes committed, the write amplification.",
		}, []string{"dataset"}),
		rewrittenFiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_rewritten_files_total",
			Help: "Data files that compaction replaced.",
		}, []string{"dataset"}),
		orphanFiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_orphan_files_deleted_total",
			Help: "Objects under the table's location that no metadata referred to, deleted once older than maintenance.orphanAgeHours.",
		}, []string{"dataset"}),
		leaseHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_lease_held",
			Help: "1 while this pod's maintainer holds the table's lease (partition 0 of the dataset's topic in the group <consumerGroup>.maintainer), 0 while another pod's does.",
		}, []string{"dataset"}),
		orphanBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_orphan_bytes_deleted_total",
			Help: "Bytes of the orphan objects deleted.",
		}, []string{"dataset"}),
		orphansKept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_orphans_kept_total",
			Help: "Objects older than maintenance.orphanAgeHours that the orphan cleanup kept although no metadata named them at its first look, by reason: committed (a commit named it after the listing), changed (written again after the listing), sidecar (a bloom-filter sidecar of a data file that is stored but not yet appended), waiting (a segment whose ready file is in this pod's WAL directory, not yet appended).",
		}, []string{"dataset", "reason"}),
		expiredDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_expired_files_deleted_total",
			Help: "Objects that only expired snapshots referred to (manifest lists, manifests, data files compaction replaced), deleted after the expiry commit, two at a time.",
		}, []string{"dataset"}),
		metadataDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_metadata_files_deleted_total",
			Help: "Old metadata.json versions deleted once they left the metadata log, on tables without write.metadata.delete-after-commit.enabled.",
		}, []string{"dataset"}),
		metadataDeletedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_metadata_bytes_deleted_total",
			Help: "Bytes of the old metadata.json versions deleted.",
		}, []string{"dataset"}),
		deletesApplied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_maintainer_deletes_applied_total",
			Help: "Rows compaction left out of the files it wrote because a position delete, equality delete or deletion vector removed them: deletes resolved, which no read has to apply again.",
		}, []string{"dataset"}),
		deleteFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_delete_files",
			Help: "Live delete files (position, equality, deletion vectors) in the table's current snapshot, after the last pass: each one is read by every scan of its partition.",
		}, []string{"dataset"}),
		partitionDeleteFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_partition_delete_files_max",
			Help: "Live delete files of the partition that has the most, after the last pass; compaction rewrites a partition whole once it has more than a few.",
		}, []string{"dataset"}),
		deletedRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_maintainer_deleted_rows",
			Help: "Records of the live delete files (rows of position deletes, keys of equality deletes), after the last pass: the rows reads have to remove.",
		}, []string{"dataset"}),
	}
	for _, c := range []prometheus.Collector{m.deletesApplied, m.deleteFiles, m.partitionDeleteFiles, m.deletedRows, m.metadataDeleted, m.metadataDeletedBytes, m.runs, m.failures, m.lastRun, m.expired, m.snapshots, m.metadataBytes, m.manifests, m.dataFiles, m.smallFiles, m.compactionsWaiting, m.rewrittenBytes, m.rewrittenFiles, m.orphanFiles, m.orphanBytes, m.orphansKept, m.expiredDeleted, m.leaseHeld} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register maintainer metrics: %w", err)
		}
	}
	return m, nil
}

// initDataset makes every series of a dataset visible at zero.
func (m *metrics) initDataset(name string) {
	m.expired.WithLabelValues(name)
	m.rewrittenBytes.WithLabelValues(name)
	m.rewrittenFiles.WithLabelValues(name)
	m.orphanFiles.WithLabelValues(name)
	m.orphanBytes.WithLabelValues(name)
	m.expiredDeleted.WithLabelValues(name)
	for _, r := range []string{keptCommitted, keptChanged, keptSidecar, keptWaiting} {
		m.orphansKept.WithLabelValues(name, r)
	}
	m.metadataDeleted.WithLabelValues(name)
	m.deletesApplied.WithLabelValues(name)
	m.metadataDeletedBytes.WithLabelValues(name)
	for _, s := range []string{stepExpire, stepManifests, stepCompact, stepOrphans, stepMetadata} {
		m.runs.WithLabelValues(name, s)
	}
	for _, s := range []string{stepLoad, stepExpire, stepManifests, stepCompact, stepOrphans, stepMetadata} {
		m.failures.WithLabelValues(name, s)
	}
}
