package bench

import (
	"io"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
)

// Options configure one benchmark run.
type Options struct {
	// Shape is devenv.ShapeNarrow or devenv.ShapeWide.
	Shape string
	// Format is the records' value format: json (the default), avro or
	// protobuf (behind the Confluent header, through a registry the bench
	// starts).
	Format string
	// Keys is devenv.KeysUniform or devenv.KeysSkewed.
	Keys string
	// Events is the number of events produced.
	Events int64
	// Rate is events per second; 0 produces as fast as possible.
	Rate int
	// Tenants is the number of tenants the keys spread over.
	Tenants int
	// Partitions is the number of partitions of the Kafka topic.
	Partitions int32
	// KafkaKey is what keys the records: KeyTenant (one tenant's events
	// stay in one Kafka partition, as in a topic keyed by customer) or
	// KeyEvent (the event id: every tenant in every Kafka partition, so
	// each partition holds a segment per tenant, the open-segment worst
	// case of the memory budget).
	KafkaKey string
	// MaxFileAgeMinutes is ingestion.wal.maxFileAgeMinutes.
	MaxFileAgeMinutes float64
	// CommitIntervalSeconds is ingestion.commitIntervalSeconds.
	CommitIntervalSeconds float64
	// MaxFileSizeBytes is ingestion.wal.maxFileSizeBytes; 0 keeps the
	// default (64 MiB).
	MaxFileSizeBytes int64
	// Storage is where the table's files go: StorageAzurite (the
	// default: an Azurite the bench starts, as production's Azure Blob
	// Storage) or StorageFile (a directory of the run). The emulator
	// serves one request at a time and its cost per request grows with
	// the objects it holds (about 4 ms at 1,000, 42 ms at 16,000), so a
	// soak of hundreds of commits on it ends up measuring the emulator;
	// on StorageFile it measures the ingestor and the table.
	Storage string
	// Out keeps the run's files (configuration, logs, WAL, catalog,
	// Azurite's data, result.json) in this directory; when empty they go
	// to a temporary directory that is removed at the end.
	Out string
	// Binary is the ingestor binary to run; the running executable when
	// empty.
	Binary string
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Log receives progress lines; nothing is written when nil.
	Log io.Writer

	// SoakCommits > 0 makes a soak run (soak.go): events are produced at
	// Rate until the committer has made this many appends, and the
	// table's health is taken at SoakCheckpoints checkpoints and at the
	// end. Events is then ignored.
	SoakCommits     int
	SoakCheckpoints int
	// Maintenance, when set, is written into the configuration as
	// maintenance.enabled; when nil the key is left out (the
	// configuration is strict, and ingestors without a maintainer reject
	// it).
	Maintenance *bool
	// MaintenanceIntervalSeconds, when > 0 and Maintenance is true, is
	// written as maintenance.intervalSeconds.
	MaintenanceIntervalSeconds float64
	// IdleCompactionMinutes, when > 0 and Maintenance is true, is written
	// as maintenance.idleCompactionMinutes; a soak run then also waits
	// that long and a few passes more after the table holds every event,
	// so that the partitions idle by then are merged, as they would be at
	// the end of a day.
	IdleCompactionMinutes float64
	// Upserts > 0 makes an upsert run: that share of the events update
	// the key (the event id) of an earlier one and a tenth of those
	// delete it (devenv.Upserts); the dataset keeps one row per key, and
	// the scorer checks the table against the last-write-wins state of
	// what was produced. The Kafka key is then the row key, whatever
	// KafkaKey says: all versions of a key must be in one partition.
	Upserts float64
	// UpsertTombstones sends every other delete of an upsert run as a
	// Kafka tombstone (the key and a null value) instead of a value whose
	// op is d, so that a run scores both ways of deleting.
	UpsertTombstones bool
	// ForeignTable creates the table with Iceberg's own defaults for
	// old metadata.json versions (kept: write.metadata.delete-after-commit.enabled
	// false, write.metadata.previous-versions-max 100), as another engine
	// creates it, instead of the ingestor's upkeep properties.
	ForeignTable bool
}

// Where the table's files go, Options.Storage.
const (
	StorageAzurite = "azurite"
	StorageFile    = "file"
)

// Kafka keys of the records, Options.KafkaKey.
const (
	KeyTenant = "tenant"
	KeyEvent  = "event"
)

// DefaultOptions are the options of `make bench`: 3M narrow events with
// uniform keys at full speed (about a minute on 2 cores), rotation by age
// after 30 s and a commit every 10 s (the freshness setting of the
// targets in docs/benchmarks.md).
func DefaultOptions() Options {
	return Options{
		Shape:                 devenv.ShapeNarrow,
		Keys:                  devenv.KeysUniform,
		Events:                3_000_000,
		Tenants:               64,
		Partitions:            4,
		KafkaKey:              KeyTenant,
		Storage:               StorageAzurite,
		MaxFileAgeMinutes:     0.5,
		CommitIntervalSeconds: 10,
		Timeout:               30 * time.Minute,
		UpsertTombstones:      true,
	}
}

// Result is the benchmark's report, printed as one JSON object. Rates are
// per second of wall time or per second of CPU time of all the ingestor's
// processes (the supervisor and its three children).
type Result struct {
	Shape      string `json:"shape"`
	Format     string `json:"format,omitempty"`
	Keys       string `json:"keys"`
	Events     int64  `json:"events"`
	Rate       int    `json:"rate"` // 0: as fast as possible
	Tenants    int    `json:"tenants"`
	Partitions int32  `json:"partitions"`
	KafkaKey   string `json:"kafka_key"`
	// Storage is where the table's files went: azurite or file.
	Storage string `json:"storage"`
	// MaxFileAgeMinutes and CommitIntervalSeconds are the settings used.
	MaxFileAgeMinutes     float64 `json:"max_file_age_minutes"`
	CommitIntervalSeconds float64 `json:"commit_interval_seconds"`
	Cores                 int     `json:"cores"`
	// LoadAverage1m is the machine's 1-minute load average when the last
	// event reached the WAL: about 2 when the run had the machine to
	// itself (the ingestor, and the generator with the broker), more when
	// something else competed for the cores.
	LoadAverage1m float64 `json:"load_average_1m"`

	// Seconds is the time from the first event produced to the consumer
	// having written the last one to the WAL.
	Seconds float64 `json:"seconds"`
	// ProduceSeconds is the time the generator took to produce them all.
	ProduceSeconds float64 `json:"produce_seconds"`
	// SecondsToTable is the time from the first event produced to the
	// commit of the last snapshot.
	SecondsToTable float64 `json:"seconds_to_table"`
	// RowsPerSec is Events / Seconds.
	RowsPerSec float64 `json:"rows_per_sec"`

	// CPUSeconds is the CPU time of all the ingestor's processes from the
	// first event produced until they exited (start-up excluded: it is
	// StartupCPUSeconds).
	CPUSeconds        float64 `json:"cpu_seconds"`
	StartupCPUSeconds float64 `json:"startup_cpu_seconds"`
	// CPUSecondsByRole is sampled every 200 ms, so each role may miss its
	// last moments; the total CPUSeconds is exact.
	CPUSecondsByRole map[string]float64 `json:"cpu_seconds_by_role"`
	RowsPerCPUSec    float64            `json:"rows_per_cpu_sec"`
	// JSONBytes is the size of the produced payloads; JSONMBPerCPUSec is
	// JSONBytes / 10^6 / CPUSeconds.
	JSONBytes       int64   `json:"json_bytes"`
	JSONMBPerCPUSec float64 `json:"json_mb_per_cpu_sec"`

	// Freshness of each event: the commit time of the append that added
	// its data file minus the time the generator made it. Rows in files
	// whose append the table no longer keeps (compacted, or expired) have
	// none; FreshnessUnknownRows counts them.
	FreshnessP50         float64 `json:"freshness_p50_s"`
	FreshnessP95         float64 `json:"freshness_p95_s"`
	FreshnessMax         float64 `json:"freshness_max_s"`
	FreshnessUnknownRows int64   `json:"freshness_unknown_rows"`

	// Files is the number of data files in the table; FileSize their size
	// distribution.
	Files            int              `json:"files"`
	FileSizeP50Bytes int64            `json:"file_size_p50_bytes"`
	FileSizeBytes    map[string]int64 `json:"file_size_bytes"` // min, p10, p50, p90, max
	RowsPerFileP50   int64            `json:"rows_per_file_p50"`
	// The files of the first tenant, the one that carries a quarter of
	// the events under skewed keys, and those of the others.
	FirstTenantFileSizeP50Bytes  int64 `json:"first_tenant_file_size_p50_bytes"`
	OtherTenantsFileSizeP50Bytes int64 `json:"other_tenants_file_size_p50_bytes"`
	// With the tenant as the Kafka key, the other tenants split in two:
	// the neighbours, whose records share the first tenant's Kafka
	// partition (and so its rotations), and the rest.
	NeighbourTenantsFileSizeP50Bytes int64   `json:"neighbour_tenants_file_size_p50_bytes,omitempty"`
	ApartTenantsFileSizeP50Bytes     int64   `json:"apart_tenants_file_size_p50_bytes,omitempty"`
	Commits                          int     `json:"commits"`
	FilesPerCommit                   float64 `json:"files_per_commit"`
	// RotationsByTrigger counts the segments rotated before the stop, by
	// trigger (size, age, open_segments); the stop rotates the rest.
	RotationsByTrigger map[string]int `json:"rotations_by_trigger"`

	// PeakRSSBytes is the highest VmHWM of each role's process.
	PeakRSSBytes map[string]int64 `json:"peak_rss_bytes"`

	// ExactlyOnce is true when every event is in the table exactly once
	// and nothing else is; the counts say what went wrong otherwise.
	ExactlyOnce bool `json:"exactly_once"`
	// Restarts counts the roles the supervisor had to start again: 0 in
	// a healthy run.
	Restarts    int   `json:"restarts"`
	TableRows   int64 `json:"table_rows"`
	Missing     int64 `json:"missing"`
	Duplicated  int64 `json:"duplicated"`
	Unexpected  int64 `json:"unexpected"`
	WrongTenant int64 `json:"wrong_tenant"`

	// Maintenance is the maintenance.enabled written into the
	// configuration, absent when none was.
	Maintenance *bool `json:"maintenance,omitempty"`
	// Upserts holds an upsert run's figures; nil otherwise. ExactlyOnce
	// is then its LastWriteWins, and Missing, Duplicated, Unexpected and
	// WrongTenant count keys and rows as it does.
	Upserts *UpsertResult `json:"upserts,omitempty"`
	// SoakResult holds a soak run's figures; nil otherwise.
	*SoakResult
}
