package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults named by the product specification.
const (
	DefaultCommitIntervalSeconds       = 20
	DefaultDrainTimeoutSeconds         = 96
	DefaultMaxFileSizeBytes            = 64 << 20
	DefaultMaxFileAgeMinutes           = 5
	DefaultMaxOpenSegmentsPerPartition = 256
	DefaultDiskHighWatermarkPct        = 80
	DefaultMetricsAddress              = ":9400"
	DefaultStartOffset                 = "earliest"
	DefaultMaxRecordBytes              = 1 << 20
	DefaultMaxJSONDepth                = 64
	DefaultMemoryBudgetBytes           = 512 << 20
	DefaultStallTimeoutSeconds         = 120
	DefaultMaintenanceIntervalSeconds  = 60
	DefaultMaintenanceMaxManifests     = 100
	DefaultMaintenanceCompactionFanIn  = 8
	DefaultMaintenanceMaxSnapshots     = 300
	DefaultMaintenanceOrphanAgeHours   = 72
	DefaultMaintenanceLease            = "kafka"
	// DefaultMaintenanceLeaseSessionTimeoutSeconds is the least session
	// timeout a Kafka broker accepts by default (its
	// group.min.session.timeout.ms is 6000).
	DefaultMaintenanceLeaseSessionTimeoutSeconds = 6
)

// DefaultMaintenanceIdleCompactionMinutes is maintenance.idleCompactionMinutes
// where the file does not set it.
const DefaultMaintenanceIdleCompactionMinutes = 15

// Config is the whole configuration file.
type Config struct {
	Ingestion Ingestion `yaml:"ingestion"`
	Kafka     Kafka     `yaml:"kafka"`
	Catalog   Catalog   `yaml:"catalog"`
	Datasets  []Dataset `yaml:"datasets"`
	Metrics   Metrics   `yaml:"metrics"`
	// SchemaRegistry is the registry the datasets share, unless a
	// dataset names its own.
	SchemaRegistry *SchemaRegistry `yaml:"schemaRegistry"`
	// Maintenance configures the maintainer, the role that keeps the
	// tables healthy (snapshot expiry, manifest merging).
	Maintenance Maintenance `yaml:"maintenance"`
}

// Maintenance configures the maintainer role.
type Maintenance struct {
	// Enabled runs the maintainer; true unless the file says false.
	Enabled bool `yaml:"enabled"`
	// IntervalSeconds is the time between two upkeep passes over a dataset's table.
	IntervalSeconds float64 `yaml:"intervalSeconds"`
	// MaxManifests rewrites the current snapshot's manifests once it holds
	// more data manifests than this.
	MaxManifests int `yaml:"maxManifests"`
	// CompactionFanIn is how many small files of one size level and
	// partition merge into one, at least 2; DefaultMaintenanceCompactionFanIn
	// unless the file sets it; 0 switches compaction off.
	CompactionFanIn int `yaml:"compactionFanIn"`
	// IdleCompactionMinutes is how long a partition must have received
	// no new file before its small files (two or more) are merged into
	// one whatever CompactionFanIn; DefaultMaintenanceIdleCompactionMinutes
	// unless the file sets it; 0 switches idle compaction off.
	IdleCompactionMinutes float64 `yaml:"idleCompactionMinutes"`
	// MaxSnapshots caps the snapshots kept of a table that sets no
	// history.expire.max-snapshot-age-ms, whatever their age, so that a
	// fast commit rate cannot grow metadata.json past the cap; 0 is no cap.
	MaxSnapshots int `yaml:"maxSnapshots"`
	// OrphanAgeHours is the age past which an object under a table's
	// location that no metadata refers to is deleted; 0 switches the
	// orphan cleanup off.
	OrphanAgeHours float64 `yaml:"orphanAgeHours"`
	// Lease is how one maintainer per table is chosen across pods:
	// DefaultMaintenanceLease (Kafka group membership) or "none".
	Lease string `yaml:"lease"`
	// LeaseSessionTimeoutSeconds is the Kafka session timeout of the
	// maintainers' group: how long after a pod dies without leaving (a
	// SIGKILL, a lost node) another pod's maintainer takes its tables over.
	LeaseSessionTimeoutSeconds float64 `yaml:"leaseSessionTimeoutSeconds"`
}

// LeaseSessionTimeout returns maintenance.leaseSessionTimeoutSeconds as a
// duration.
func (c *Config) LeaseSessionTimeout() time.Duration {
	return seconds(c.Maintenance.LeaseSessionTimeoutSeconds)
}

// IdleCompaction returns maintenance.idleCompactionMinutes as a
// duration; 0 is no idle compaction.
func (c *Config) IdleCompaction() time.Duration {
	return time.Duration(c.Maintenance.IdleCompactionMinutes * float64(time.Minute))
}

// MaintenanceInterval returns maintenance.intervalSeconds as a duration.
func (c *Config) MaintenanceInterval() time.Duration {
	return seconds(c.Maintenance.IntervalSeconds)
}

// Ingestion holds the timing and WAL settings of the record path.
type Ingestion struct {
	// CommitIntervalSeconds is the time between two table commits of a dataset.
	CommitIntervalSeconds float64 `yaml:"commitIntervalSeconds"`
	// DrainTimeoutSeconds bounds the whole shutdown sequence.
	DrainTimeoutSeconds float64 `yaml:"drainTimeoutSeconds"`
	// MaxRecordBytes drops records whose payload is larger, as too_large.
	MaxRecordBytes int `yaml:"maxRecordBytes"`
	// MaxJSONDepth drops records nested deeper, as too_deep.
	MaxJSONDepth int `yaml:"maxJSONDepth"`
	// StallTimeoutSeconds is how long a dataset's consumer may consume
	// nothing while its partitions hold records to read before its
	// watchdog calls it stalled.
	StallTimeoutSeconds float64 `yaml:"stallTimeoutSeconds"`
	// WAL configures the local write-ahead log.
	WAL WAL `yaml:"wal"`
}

// WAL configures the local Parquet write-ahead log and its rotation.
type WAL struct {
	// Dir is the WAL directory shared by all roles.
	Dir string `yaml:"dir"`
	// MaxFileSizeBytes rotates a segment when it reaches this size.
	MaxFileSizeBytes int64 `yaml:"maxFileSizeBytes"`
	// MaxFileAgeMinutes rotates a segment when it reaches this age; decimals allowed.
	MaxFileAgeMinutes float64 `yaml:"maxFileAgeMinutes"`
	// MaxOpenSegmentsPerPartition rotates all segments of a Kafka partition
	// when it has more open segments than this.
	MaxOpenSegmentsPerPartition int `yaml:"maxOpenSegmentsPerPartition"`
	// DiskHighWatermarkPct pauses consumption when the WAL volume is this full.
	DiskHighWatermarkPct float64 `yaml:"diskHighWatermarkPct"`
	// MemoryBudgetBytes bounds the memory of the consumer's open segments.
	MemoryBudgetBytes int64 `yaml:"memoryBudgetBytes"`
}

// Kafka holds the broker connection settings.
type Kafka struct {
	// Brokers lists the seed brokers as host:port.
	Brokers []string `yaml:"brokers"`
	// ClientID is the Kafka client id; it defaults to "ingestor".
	ClientID string `yaml:"clientId"`
	// TLS, when set, encrypts the connections to the brokers.
	TLS *KafkaTLS `yaml:"tls"`
	// SASL, when set, authenticates to the brokers.
	SASL *KafkaSASL `yaml:"sasl"`
}

// KafkaTLS configures TLS to the brokers.
type KafkaTLS struct {
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates;
	// the system pool when empty.
	CAFile string `yaml:"caFile"`
	// CertFile and KeyFile are the client certificate and key (PEM) for
	// mutual TLS; both or neither.
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	// ServerName overrides the name checked in the brokers' certificates.
	ServerName string `yaml:"serverName"`
}

// KafkaSASL configures SASL authentication to the brokers.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER.
	Mechanism string `yaml:"mechanism"`
	// Username and Password for PLAIN and SCRAM.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Token is the bearer token for OAUTHBEARER.
	Token string `yaml:"token"`
}

// Catalog is the Iceberg catalog: a name and the iceberg-go catalog
// properties, passed through as they are (type, uri, warehouse, adls.*, ...).
type Catalog struct {
	Name       string
	Properties map[string]string
}

// Metrics holds the addresses of the Prometheus endpoints.
type Metrics struct {
	// Address is the supervisor's listen address; the roles take the next
	// three ports unless Roles names theirs.
	Address string `yaml:"address"`
	// Roles overrides the address of each role's endpoint.
	Roles RoleAddresses `yaml:"roles"`
	// Pprof serves Go's profiles under /debug/pprof/ beside /metrics.
	// Off by default: the profiles show the process's command line and
	// memory to whoever reaches the port.
	Pprof bool `yaml:"pprof"`
}

// RoleAddresses overrides the metrics address of each role.
type RoleAddresses struct {
	Consumer   string `yaml:"consumer"`
	Uploader   string `yaml:"uploader"`
	Committer  string `yaml:"committer"`
	Maintainer string `yaml:"maintainer"`
}

// Dataset is one Kafka topic flowing into one Iceberg table.
type Dataset struct {
	// Name identifies the dataset in metrics and logs.
	Name string `yaml:"name"`
	// Topic is the Kafka topic read by the dataset's consumer group.
	Topic string `yaml:"topic"`
	// Table is the Iceberg table as namespace.table.
	Table string `yaml:"table"`
	// ConsumerGroup defaults to "ingestor-<name>".
	ConsumerGroup string `yaml:"consumerGroup"`
	// StartOffset is where a group with no committed offset starts: earliest or latest.
	StartOffset string `yaml:"startOffset"`
	// Format is how the records' values are encoded: json, avro or protobuf.
	Format string `yaml:"format"`
	// AvroSchemaFile is the Avro schema (.avsc) of raw Avro values, which
	// carry no schema id.
	AvroSchemaFile string `yaml:"avroSchemaFile"`
	// SchemaRegistry, when set, replaces the top-level schemaRegistry for
	// this dataset.
	SchemaRegistry *SchemaRegistry `yaml:"schemaRegistry"`
	// CustomMapping maps each column name to a path or JMESPath expression
	// on the value; when absent each column takes the top-level field of
	// its own name.
	CustomMapping map[string]string `yaml:"customMapping"`
	// BloomFilterColumns get a bloom-filter sidecar per uploaded file.
	BloomFilterColumns []string `yaml:"bloomFilterColumns"`
	// DeadLetterTopic, when set, receives every dropped record with its
	// reason, topic, partition and offset in headers.
	DeadLetterTopic string `yaml:"deadLetterTopic"`
	// Create, when set, creates the table if it does not exist.
	Create *CreateTable `yaml:"create"`
	// Upsert, when set, keeps one row per key in the table: the last
	// record of a key by Kafka offset, and none after a delete.
	Upsert *Upsert `yaml:"upsert"`
}

// Upsert makes a dataset keep one row per key (docs/records.md, "Upserts
// and deletes by key").
type Upsert struct {
	// KeyColumns are the table's required columns that identify a row;
	// the ingestor sets them as the identifier fields of a table it
	// creates.
	KeyColumns []string `yaml:"keyColumns"`
	// DeleteWhen, when set, recognises a delete by a field of the value.
	// A Kafka tombstone (a key and a null value) is always a delete.
	DeleteWhen *DeleteWhen `yaml:"deleteWhen"`
}

// DeleteWhen recognises a delete record: the value at Path is one of Equals.
type DeleteWhen struct {
	// Path is a path in the value (a.b.c), as in customMapping.
	Path string `yaml:"path"`
	// Equals are the values that mark a delete, compared as strings.
	Equals []string `yaml:"equals"`
}

// CreateTable describes a table to create when it is missing.
type CreateTable struct {
	// Columns of the table, in order.
	Columns []Column `yaml:"columns"`
	// Partition fields of the table's partition spec, in order.
	Partition []PartitionField `yaml:"partition"`
	// Properties are table properties set at creation.
	Properties map[string]string `yaml:"properties"`
}

// Column is one column of a table to create.
type Column struct {
	Name string `yaml:"name"`
	// Type is an Iceberg type: string, int, long, float, double, boolean,
	// date, timestamp, timestamptz, binary, uuid, decimal(P,S),
	// list<T>, map<K,V> or struct<name:T,...>.
	Type     string `yaml:"type"`
	Required bool   `yaml:"required"`
}

// PartitionField is one field of a table's partition spec.
type PartitionField struct {
	// Column is the source column.
	Column string `yaml:"column"`
	// Transform is identity, year, month, day, hour, bucket[N] or truncate[W].
	Transform string `yaml:"transform"`
	// Name of the partition field; defaults to column_transform.
	Name string `yaml:"name"`
}

// CommitInterval returns ingestion.commitIntervalSeconds as a duration.
func (c *Config) CommitInterval() time.Duration {
	return seconds(c.Ingestion.CommitIntervalSeconds)
}

// DrainTimeout returns ingestion.drainTimeoutSeconds as a duration.
func (c *Config) DrainTimeout() time.Duration {
	return seconds(c.Ingestion.DrainTimeoutSeconds)
}

// StallTimeout returns ingestion.stallTimeoutSeconds as a duration.
func (c *Config) StallTimeout() time.Duration {
	return seconds(c.Ingestion.StallTimeoutSeconds)
}

// MaxFileAge returns ingestion.wal.maxFileAgeMinutes as a duration.
func (w WAL) MaxFileAge() time.Duration {
	return seconds(w.MaxFileAgeMinutes * 60)
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// Dataset returns the dataset with the given name.
func (c *Config) Dataset(name string) (Dataset, bool) {
	for _, d := range c.Datasets {
		if d.Name == name {
			return d, true
		}
	}
	return Dataset{}, false
}

// DatasetByTopic returns the dataset that reads the given topic.
func (c *Config) DatasetByTopic(topic string) (Dataset, bool) {
	for _, d := range c.Datasets {
		if d.Topic == topic {
			return d, true
		}
	}
	return Dataset{}, false
}

// TableIdent splits a dataset's table into namespace and name parts.
func (d Dataset) TableIdent() []string {
	return strings.Split(d.Table, ".")
}

// applyDefaults fills every key the file left out.
func (c *Config) applyDefaults() {
	in := &c.Ingestion
	if in.CommitIntervalSeconds == 0 {
		in.CommitIntervalSeconds = DefaultCommitIntervalSeconds
	}
	if in.DrainTimeoutSeconds == 0 {
		in.DrainTimeoutSeconds = DefaultDrainTimeoutSeconds
	}
	if in.StallTimeoutSeconds == 0 {
		in.StallTimeoutSeconds = DefaultStallTimeoutSeconds
	}
	if in.MaxRecordBytes == 0 {
		in.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if in.MaxJSONDepth == 0 {
		in.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if in.WAL.MaxFileSizeBytes == 0 {
		in.WAL.MaxFileSizeBytes = DefaultMaxFileSizeBytes
	}
	if in.WAL.MaxFileAgeMinutes == 0 {
		in.WAL.MaxFileAgeMinutes = DefaultMaxFileAgeMinutes
	}
	if in.WAL.MaxOpenSegmentsPerPartition == 0 {
		in.WAL.MaxOpenSegmentsPerPartition = DefaultMaxOpenSegmentsPerPartition
	}
	if in.WAL.MemoryBudgetBytes == 0 {
		in.WAL.MemoryBudgetBytes = DefaultMemoryBudgetBytes
	}
	if in.WAL.DiskHighWatermarkPct == 0 {
		in.WAL.DiskHighWatermarkPct = DefaultDiskHighWatermarkPct
	}
	if c.Kafka.ClientID == "" {
		c.Kafka.ClientID = "ingestor"
	}
	if c.Metrics.Address == "" {
		c.Metrics.Address = DefaultMetricsAddress
	}
	if c.Maintenance.IntervalSeconds == 0 {
		c.Maintenance.IntervalSeconds = DefaultMaintenanceIntervalSeconds
	}
	if c.Maintenance.Lease == "" {
		c.Maintenance.Lease = DefaultMaintenanceLease
	}
	if c.Maintenance.LeaseSessionTimeoutSeconds == 0 {
		c.Maintenance.LeaseSessionTimeoutSeconds = DefaultMaintenanceLeaseSessionTimeoutSeconds
	}
	if c.Maintenance.MaxManifests == 0 {
		c.Maintenance.MaxManifests = DefaultMaintenanceMaxManifests
	}
	for i := range c.Datasets {
		d := &c.Datasets[i]
		if d.ConsumerGroup == "" && d.Name != "" {
			d.ConsumerGroup = "ingestor-" + d.Name
		}
		if d.StartOffset == "" {
			d.StartOffset = DefaultStartOffset
		}
		if d.Format == "" {
			d.Format = DefaultFormat
		}
	}
}

// Load reads, checks and completes the configuration file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := checkWritable(c.Ingestion.WAL.Dir); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// checkWritable refuses a WAL directory that cannot be written: an
// existing one must take a new file, a missing one must be creatable
// (the consumer creates it). Nothing is left behind.
func checkWritable(dir string) error {
	bad := func(err error) error {
		return &KeyError{Key: "ingestion.wal.dir", Problem: fmt.Sprintf("%s is not writable: %v", dir, err)}
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := filepath.Dir(filepath.Clean(dir))
		for {
			pi, perr := os.Stat(parent)
			if perr == nil {
				if !pi.IsDir() {
					return bad(fmt.Errorf("%s is not a directory", parent))
				}
				dir = parent
				break
			}
			if !errors.Is(perr, os.ErrNotExist) || parent == filepath.Dir(parent) {
				return bad(perr)
			}
			parent = filepath.Dir(parent)
		}
	case err != nil:
		return bad(err)
	case !info.IsDir():
		return bad(errors.New("not a directory"))
	}
	f, err := os.CreateTemp(dir, ".ingestor-probe-*")
	if err != nil {
		return bad(err)
	}
	f.Close()
	return os.Remove(f.Name())
}
