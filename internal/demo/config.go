package demo

import (
	"fmt"
	"path/filepath"

	"github.com/icewal/ingestor/internal/devenv"
)

// Topic is the demo's Kafka topic.
const Topic = "clicks"

// Config returns the demo's configuration: the embedded default, a SQLite
// catalog and a file warehouse under dir, short rotation and commit
// intervals so rows show up in seconds, and a table partitioned by tenant
// and day.
func Config(dir, broker string, metricsPorts []int) string {
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
		metricsPorts[0], metricsPorts[1], metricsPorts[2], metricsPorts[3]) + devenv.ClicksDataset(Topic)
}
