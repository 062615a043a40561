package demo

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
)

// Topic is the demo's Kafka topic of JSON events; an Avro or Protobuf
// demo writes to Topic-<format> instead (TopicOf).
const Topic = "clicks"

// TopicOf is the demo's topic in a value format, one per format: a demo
// started again in the same directory with another format does not meet
// the records of the first.
func TopicOf(format string) string {
	if format == "" || format == config.FormatJSON {
		return Topic
	}
	return Topic + "-" + format
}

// Config returns the demo's configuration: the embedded default, a SQLite
// catalog and a file warehouse under dir, short rotation and commit
// intervals so rows show up in seconds, and a table partitioned by tenant
// and day. For JSON (format "" or json) the dataset maps the generator's
// click events; for Avro and Protobuf it reads the narrow bench shape's
// events by name through the schema registry at registry.
func Config(dir, broker string, metricsPorts []int, format, registry string) string {
	return fmt.Sprintf(`# The demo's configuration, written by 'ingestor demo'.
ingestion:
  commitIntervalSeconds: 2
  drainTimeoutSeconds: 30
  wal: {dir: %q, maxFileAgeMinutes: 0.05}
kafka: {brokers: [%q]}
catalog:
  name: demo
  type: sql
  uri: "file:%s"
  sql.driver: sqlite
  sql.dialect: sqlite
  warehouse: "file://%s"
metrics:
  address: "127.0.0.1:%d"
  roles: {consumer: "127.0.0.1:%d", uploader: "127.0.0.1:%d", committer: "127.0.0.1:%d"}
datasets:
`, filepath.Join(dir, "wal"), broker, filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse"),
		metricsPorts[0], metricsPorts[1], metricsPorts[2], metricsPorts[3]) + dataset(format, registry)
}

// dataset is the demo's `datasets` entry in format.
func dataset(format, registry string) string {
	if format == "" || format == config.FormatJSON {
		return devenv.ClicksDataset(Topic)
	}
	// A table of its own per format: the JSON demo's web.clicks has other
	// columns, and a table that does not fit the writer schema stops the
	// start.
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: clicks\n    topic: %s\n    table: web.clicks_%s\n", TopicOf(format), format)
	fmt.Fprintf(&b, "    format: %s\n    schemaRegistry: {url: %q}\n    bloomFilterColumns: [%s]\n", format, registry, devenv.ColumnID)
	fmt.Fprintf(&b, "    create:\n      columns:\n")
	for _, c := range devenv.NarrowShape().Columns {
		fmt.Fprintf(&b, "        - {name: %s, type: %q, required: %t}\n", c.Name, c.Type, c.Required)
	}
	fmt.Fprintf(&b, "      partition:\n        - {column: %s, transform: identity}\n        - {column: %s, transform: day}\n",
		devenv.ColumnTenant, devenv.ColumnTS)
	return b.String()
}
