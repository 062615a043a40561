package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/icewal/ingestor/internal/devenv"
)

// Names of the benchmark's topic, dataset and table.
const (
	topic   = "bench"
	dataset = "bench"
	tableID = "bench.events"
)

// setup is what the configuration points at.
type setup struct {
	walDir   string
	broker   string
	catalog  map[string]string // catalog properties but the name
	metrics  [5]string         // supervisor, consumer, uploader, committer, maintainer
	shape    devenv.Shape
	opts     Options
	drainSec int
	// format is the records' value format, and registry the schema
	// registry's URL of an Avro or Protobuf run, "" for JSON.
	format, registry string
}

// configYAML renders the ingestor's configuration: the production defaults
// but for the options the benchmark sets, and a table of the shape's
// columns partitioned by tenant and hour, or, with upserts, keyed by the
// event id and partitioned by its buckets.
func configYAML(s setup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `ingestor bench`.\ningestion:\n")
	fmt.Fprintf(&b, "  commitIntervalSeconds: %g\n  drainTimeoutSeconds: %d\n", s.opts.CommitIntervalSeconds, s.drainSec)
	fmt.Fprintf(&b, "  wal: {dir: %q, maxFileAgeMinutes: %g", s.walDir, s.opts.MaxFileAgeMinutes)
	if s.opts.MaxFileSizeBytes > 0 {
		fmt.Fprintf(&b, ", maxFileSizeBytes: %d", s.opts.MaxFileSizeBytes)
	}
	fmt.Fprintf(&b, "}\nkafka: {brokers: [%q]}\ncatalog:\n  name: bench\n", s.broker)
	for _, k := range slices.Sorted(maps.Keys(s.catalog)) {
		fmt.Fprintf(&b, "  %s: %q\n", k, s.catalog[k])
	}
	// The bench's processes serve their profiles, so that a run can be
	// profiled in place; they listen on loopback.
	fmt.Fprintf(&b, "metrics:\n  address: %q\n  pprof: true\n  roles: {consumer: %q, uploader: %q, committer: %q, maintainer: %q}\n",
		s.metrics[0], s.metrics[1], s.metrics[2], s.metrics[3], s.metrics[4])
	// The key goes in only when asked for: the configuration is strict,
	// so an ingestor without a maintainer would refuse it.
	switch {
	case s.opts.Maintenance != nil && *s.opts.Maintenance && (s.opts.MaintenanceIntervalSeconds > 0 || s.opts.IdleCompactionMinutes > 0):
		fmt.Fprintf(&b, "maintenance: {enabled: true")
		if s.opts.MaintenanceIntervalSeconds > 0 {
			fmt.Fprintf(&b, ", intervalSeconds: %g", s.opts.MaintenanceIntervalSeconds)
		}
		if s.opts.IdleCompactionMinutes > 0 {
			fmt.Fprintf(&b, ", idleCompactionMinutes: %g", s.opts.IdleCompactionMinutes)
		}
		fmt.Fprintf(&b, "}\n")
	case s.opts.Maintenance != nil:
		fmt.Fprintf(&b, "maintenance: {enabled: %t}\n", *s.opts.Maintenance)
	}
	fmt.Fprintf(&b, "datasets:\n  - name: %s\n    topic: %s\n    table: %s\n", dataset, topic, tableID)
	if s.registry != "" {
		// Avro or Protobuf values of one field per column: every column
		// by name.
		fmt.Fprintf(&b, "    format: %s\n    schemaRegistry: {url: %q}\n", s.format, s.registry)
	} else {
		fmt.Fprintf(&b, "    customMapping:\n")
		for _, c := range s.shape.Columns {
			fmt.Fprintf(&b, "      %s: %q\n", c.Name, s.shape.Mapping[c.Name])
		}
	}
	fmt.Fprintf(&b, "    create:\n      columns:\n")
	for _, c := range s.shape.Columns {
		fmt.Fprintf(&b, "        - {name: %s, type: %q, required: %t}\n", c.Name, c.Type, c.Required)
	}
	if s.opts.ForeignTable {
		fmt.Fprintf(&b, "      properties: {write.metadata.delete-after-commit.enabled: \"false\", write.metadata.previous-versions-max: \"100\"}\n")
	}
	if s.opts.Upserts > 0 {
		// A table of upserts is partitioned by its key only: buckets of
		// the event id, which stays in one partition through its
		// updates.
		fmt.Fprintf(&b, "      partition:\n        - {column: %s, transform: \"bucket[%d]\"}\n", devenv.ColumnID, upsertBuckets)
		fmt.Fprintf(&b, "    upsert: {keyColumns: [%s], deleteWhen: {path: %s, equals: [%s]}}\n", devenv.ColumnID, devenv.ColumnOp, devenv.OpDelete)
		return b.String()
	}
	fmt.Fprintf(&b, "      partition:\n        - {column: %s, transform: identity}\n        - {column: %s, transform: hour}\n",
		devenv.ColumnTenant, devenv.ColumnTS)
	return b.String()
}
