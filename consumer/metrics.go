package consumer

import "github.com/prometheus/client_golang/prometheus"

// metrics are the consumer's Prometheus metrics, labelled by dataset.
type metrics struct {
	records       *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	rowsWritten   *prometheus.CounterVec
	deletes       *prometheus.CounterVec
	keyMismatches *prometheus.CounterVec
	segmentsOpen  *prometheus.GaugeVec
	rotated       *prometheus.CounterVec
	bytesRotated  *prometheus.CounterVec
	commits       *prometheus.CounterVec
	commitFails   *prometheus.CounterVec
	recovered     *prometheus.CounterVec
	assigned      *prometheus.GaugeVec
	lastRotateAge *prometheus.GaugeVec
	volumeUsed    prometheus.Gauge
	paused        *prometheus.GaugeVec
	pausedSeconds prometheus.Counter
	lag           *prometheus.GaugeVec
	budgetFlushes *prometheus.CounterVec
	unassigned    *prometheus.GaugeVec
	stalled       *prometheus.GaugeVec
	rejoins       *prometheus.CounterVec
	// commitsRebalancing counts commits refused with REBALANCE_IN_PROGRESS.
	commitsRebalancing *prometheus.CounterVec
	// The schema registry (registry.go, schemawait.go).
	schemaWaiting  *prometheus.GaugeVec
	registryErrors prometheus.Counter
	schemasFetched prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_records_total", Help: "Kafka records consumed.",
		}, []string{"dataset"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_records_dropped_total", Help: "Records dropped because they could not be decoded, by reason.",
		}, []string{"dataset", "reason"}),
		rowsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_rows_written_total", Help: "Rows appended to WAL segments.",
		}, []string{"dataset"}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_deletes_total", Help: "Delete records (deleteWhen or a tombstone) of upsert datasets, written as delete rows.",
		}, []string{"dataset"}),
		keyMismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_upsert_key_mismatches_total", Help: "Records of upsert datasets whose Kafka key is not the value of their one key column (written all the same).",
		}, []string{"dataset"}),
		segmentsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_segments_open", Help: "Open active_* WAL segments.",
		}, []string{"dataset"}),
		rotated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_files_rotated_total", Help: "Segments rotated into ready_* files, by trigger.",
		}, []string{"dataset", "trigger"}),
		bytesRotated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_bytes_rotated_total", Help: "Bytes of the segments rotated into ready_* files.",
		}, []string{"dataset"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_offset_commits_total", Help: "Kafka offset commits after rotation.",
		}, []string{"dataset"}),
		commitFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_offset_commit_failures_total", Help: "Kafka offset commits that failed and were retried.",
		}, []string{"dataset"}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_recovery_files_total", Help: "WAL files handled by the start-up recovery, by action.",
		}, []string{"dataset", "action"}),
		assigned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_partitions_assigned", Help: "Kafka partitions assigned to this consumer.",
		}, []string{"dataset"}),
		lastRotateAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_last_rotation_timestamp_seconds", Help: "Unix time of the last rotation.",
		}, []string{"dataset"}),
		volumeUsed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ingestor_consumer_wal_volume_used_ratio", Help: "How full the WAL volume is, 0 to 1, measured every 250 ms.",
		}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_paused", Help: "1 while the dataset's Kafka consumer is paused for the reason: disk (the WAL volume is above its high watermark), operator (ingestor pause), or schema_registry (some of its partitions wait for a schema the registry has not answered for).",
		}, []string{"dataset", "reason"}),
		pausedSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingestor_consumer_paused_seconds_total", Help: "Time spent with consumption paused because the WAL volume was above its high watermark.",
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_lag_records", Help: "Records between the last one consumed and the partition's high watermark, as of the last fetch.",
		}, []string{"dataset", "partition"}),
		budgetFlushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_budget_flushes_total", Help: "Row groups written early to keep within ingestion.wal.memoryBudgetBytes.",
		}, []string{"dataset"}),
		unassigned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_unassigned_partitions", Help: "Partitions of the dataset's topic that no member of its consumer group owns, as the watchdog last saw them.",
		}, []string{"dataset"}),
		stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_stalled", Help: "1 while the consumer watchdog sees a problem, by reason: unassigned, no_progress, topic_recreated.",
		}, []string{"dataset", "reason"}),
		rejoins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_generations_lost_total", Help: "Times an offset commit found the consumer group generation over (a pause past the session timeout): the partitions were handled as recovery would and the group rejoined, without a restart.",
		}, []string{"dataset"}),
		commitsRebalancing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_consumer_commits_rebalancing_total", Help: "Offset commits refused with REBALANCE_IN_PROGRESS: the partitions were handled as recovery would and their records read again from the committed offsets, without a restart.",
		}, []string{"dataset"}),
		schemaWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_consumer_schema_waiting_partitions", Help: "Partitions paused because their next record names a schema id the schema registry has not answered for yet; they resume once it has.",
		}, []string{"dataset"}),
		registryErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingestor_consumer_schema_registry_errors_total", Help: "Schema fetches that failed for a reason other than the schema not existing (the registry down, refusing, or answering an error); each is retried.",
		}),
		schemasFetched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingestor_consumer_schemas_fetched_total", Help: "Writer schemas fetched from the schema registry, once per schema id.",
		}),
	}
	reg.MustRegister(m.schemaWaiting, m.registryErrors, m.schemasFetched)
	reg.MustRegister(m.records, m.dropped, m.rowsWritten, m.deletes, m.keyMismatches, m.segmentsOpen, m.rotated,
		m.bytesRotated, m.commits, m.commitFails, m.recovered, m.assigned, m.lastRotateAge,
		m.volumeUsed, m.paused, m.pausedSeconds, m.lag, m.budgetFlushes, m.unassigned, m.stalled, m.rejoins, m.commitsRebalancing)
	return m
}
