package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const example = `
ingestion:
  commitIntervalSeconds: 2
  wal: {dir: /tmp/demo/wal, maxFileAgeMinutes: 0.05}
kafka: {brokers: [127.0.0.1:9092]}
catalog: {name: demo, type: sql, uri: "file:/tmp/demo/catalog.db", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file:///tmp/demo/warehouse"}
datasets:
  - name: clicks
    topic: clicks
    table: web.clicks
    customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts, country: geo.country}
    bloomFilterColumns: [event_id]
`

func TestParseExampleAndDefaults(t *testing.T) {
	c, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CommitInterval(); got != 2*time.Second {
		t.Errorf("CommitInterval = %s", got)
	}
	if got := c.DrainTimeout(); got != 96*time.Second {
		t.Errorf("DrainTimeout default = %s, want 96s", got)
	}
	w := c.Ingestion.WAL
	if w.MaxFileAge() != 3*time.Second {
		t.Errorf("MaxFileAge = %s, want 3s", w.MaxFileAge())
	}
	if w.MaxFileSizeBytes != 64<<20 || w.MaxOpenSegmentsPerPartition != 256 || w.DiskHighWatermarkPct != 80 {
		t.Errorf("WAL defaults = %+v", w)
	}
	if c.Metrics.Address != ":9400" {
		t.Errorf("metrics.address default = %q", c.Metrics.Address)
	}
	d := c.Datasets[0]
	if d.ConsumerGroup != "ingestor-clicks" || d.StartOffset != "earliest" {
		t.Errorf("dataset defaults = %+v", d)
	}
	if c.Catalog.Name != "demo" || c.Catalog.Properties["sql.driver"] != "sqlite" || c.Catalog.Properties["type"] != "sql" {
		t.Errorf("catalog = %+v", c.Catalog)
	}
	if _, ok := c.Catalog.Properties["name"]; ok {
		t.Error("catalog name passed through as a property")
	}
	if d.TableIdent()[0] != "web" || d.TableIdent()[1] != "clicks" {
		t.Errorf("TableIdent = %v", d.TableIdent())
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string
		want    string
	}{
		{"unknown key", [2]string{"commitIntervalSeconds: 2", "commitIntervalSeconds: 2\n  commitInterval: 3"}, "ingestion.commitInterval: unknown key"},
		{"unknown wal key", [2]string{"maxFileAgeMinutes: 0.05", "maxFileAgeMinutes: 0.05, maxFileAge: 1"}, "ingestion.wal.maxFileAge: unknown key"},
		{"wrong type", [2]string{"maxFileAgeMinutes: 0.05", "maxFileAgeMinutes: soon"}, `ingestion.wal.maxFileAgeMinutes: want a number, got "soon"`},
		{"whole number wanted", [2]string{"wal: {dir", "wal: {maxFileSizeBytes: 1.5, dir"}, "ingestion.wal.maxFileSizeBytes: want a whole number"},
		{"list wanted", [2]string{"brokers: [127.0.0.1:9092]", "brokers: 127.0.0.1:9092"}, "kafka.brokers: want a list"},
		{"bad broker", [2]string{"brokers: [127.0.0.1:9092]", "brokers: [localhost]"}, "kafka.brokers[0]: want host:port"},
		{"missing wal dir", [2]string{"dir: /tmp/demo/wal, ", ""}, "ingestion.wal.dir: required"},
		{"missing topic", [2]string{"    topic: clicks\n", ""}, "datasets[0].topic: required"},
		{"bad table", [2]string{"table: web.clicks", "table: clicks"}, "datasets[0].table: want namespace.table"},
		{"bad start offset", [2]string{"table: web.clicks", "table: web.clicks\n    startOffset: middle"}, "datasets[0].startOffset: want earliest or latest"},
		{"watermark zero", [2]string{"maxFileAgeMinutes: 0.05", "maxFileAgeMinutes: 0.05, diskHighWatermarkPct: 120"}, "ingestion.wal.diskHighWatermarkPct: must be above 5 and at most 100"},
		{"mapping not a map", [2]string{"customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts, country: geo.country}", "customMapping: [id]"}, "datasets[0].customMapping: want a mapping"},
		{"nested catalog value", [2]string{"warehouse: \"file:///tmp/demo/warehouse\"", "warehouse: {a: b}"}, "catalog.warehouse: want a string"},
		{"missing catalog type", [2]string{"type: sql, ", ""}, "catalog.type: required"},
		{"bad create column", [2]string{"bloomFilterColumns: [event_id]", "create: {columns: [{name: x}]}"}, "datasets[0].create.columns[0].type: required"},
		{"upsert without keys", [2]string{"    bloomFilterColumns: [event_id]\n", "    bloomFilterColumns: [event_id]\n    upsert: {deleteWhen: {path: op, equals: [d]}}\n"}, "datasets[0].upsert.keyColumns: required"},
		{"upsert deleteWhen without values", [2]string{"    bloomFilterColumns: [event_id]\n", "    bloomFilterColumns: [event_id]\n    upsert: {keyColumns: [event_id], deleteWhen: {path: op}}\n"}, "datasets[0].upsert.deleteWhen.equals: required"},
		{"upsert partitioned by a column that is not a key", [2]string{"bloomFilterColumns: [event_id]", "bloomFilterColumns: [event_id]\n    upsert: {keyColumns: [event_id]}\n    create: {columns: [{name: event_id, type: string}, {name: ts, type: timestamptz}], partition: [{column: ts, transform: hour}]}"}, `datasets[0].create.partition[0].column: "ts" is not a key column`},
		{"negative", [2]string{"commitIntervalSeconds: 2", "commitIntervalSeconds: -2"}, "ingestion.commitIntervalSeconds: must be positive"},
		{"two datasets, one table", [2]string{"    bloomFilterColumns: [event_id]\n", "    bloomFilterColumns: [event_id]\n  - {name: views, topic: views, table: web.clicks, customMapping: {event_id: id}}\n"}, `datasets[1].table: datasets "clicks" and "views" both write into table web.clicks`},
		{"two datasets, one table spelled in another case", [2]string{"    bloomFilterColumns: [event_id]\n", "    bloomFilterColumns: [event_id]\n  - {name: views, topic: views, table: Web.Clicks, customMapping: {event_id: id}}\n"}, `datasets[1].table: datasets "clicks" and "views" both write into table Web.Clicks`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(example, tc.replace[0], tc.replace[1], 1)
			if doc == example {
				t.Fatalf("replacement %q did not apply", tc.replace[0])
			}
			_, err := Parse([]byte(doc))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", doc)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// A configuration with mistakes of every kind (an unknown key, a wrong
// type, a missing required key, a bad value) names all of them at once,
// and a key that did not decode is not reported again as missing.
func TestParseNamesEveryProblem(t *testing.T) {
	doc := example
	for _, r := range [][2]string{
		{"commitIntervalSeconds: 2", "commitIntervalSeconds: 2\n  commitInterval: 3"},
		{"brokers: [127.0.0.1:9092]", "brokers: 127.0.0.1:9092"},
		{"    topic: clicks\n", ""},
		{"table: web.clicks", "table: clicks"},
	} {
		next := strings.Replace(doc, r[0], r[1], 1)
		if next == doc {
			t.Fatalf("replacement %q did not apply", r[0])
		}
		doc = next
	}
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatalf("Parse accepted:\n%s", doc)
	}
	for _, want := range []string{
		"ingestion.commitInterval: unknown key",
		"kafka.brokers: want a list",
		"datasets[0].topic: required",
		"datasets[0].table: want namespace.table",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "kafka.brokers: required") {
		t.Errorf("kafka.brokers reported twice:\n%v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("ingestion: [1]\n"), 0o644)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "ingestion: want a mapping") {
		t.Fatalf("Load error = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("ingestion: {wal: {dir: x}}\n"))
	f.Add([]byte("datasets: [{name: a, customMapping: {a: '[0'}}]"))
	f.Add([]byte("a: &x [*x]"))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Parse(doc)
		if err == nil && c.Ingestion.WAL.Dir == "" {
			t.Fatal("accepted a config without a WAL directory")
		}
	})
}

func TestParseRefusesRecursiveAlias(t *testing.T) {
	doc := strings.Replace(example, "customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts, country: geo.country}", "customMapping: &m {a: *m}", 1)
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "datasets[0].customMapping.a: YAML aliases are not supported") {
		t.Fatalf("Parse error = %v", err)
	}
}

func TestSecretsFromEnvAndFile(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("file-s3cret\n"), 0o600)
	t.Setenv("INGESTOR_TEST_PASSWORD", "env-s3cret")
	doc := strings.Replace(example, "kafka: {brokers: [127.0.0.1:9092]}",
		"kafka: {brokers: [127.0.0.1:9092], sasl: {mechanism: SCRAM-SHA-512, username: ingestor, password: '${env:INGESTOR_TEST_PASSWORD}'}}", 1)
	doc = strings.Replace(doc, "warehouse: \"file:///tmp/demo/warehouse\"",
		"warehouse: \"file:///tmp/demo/warehouse\", adls.auth.shared-key.account.key: '${file:"+keyFile+"}'", 1)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.SASL.Password != "env-s3cret" {
		t.Errorf("password = %q", c.Kafka.SASL.Password)
	}
	if got := c.Catalog.Properties["adls.auth.shared-key.account.key"]; got != "file-s3cret" {
		t.Errorf("account key = %q", got)
	}

	missing := strings.Replace(doc, "INGESTOR_TEST_PASSWORD", "INGESTOR_TEST_UNSET_VAR", 1)
	_, err = Parse([]byte(missing))
	if err == nil || !strings.Contains(err.Error(), "kafka.sasl.password: environment variable INGESTOR_TEST_UNSET_VAR is not set") {
		t.Fatalf("error = %v", err)
	}
	noFile := strings.Replace(doc, keyFile, filepath.Join(dir, "absent"), 1)
	_, err = Parse([]byte(noFile))
	if err == nil || !strings.Contains(err.Error(), "catalog.adls.auth.shared-key.account.key: read secret file") {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "s3cret") {
		t.Fatalf("error shows a secret: %v", err)
	}
}

func TestKafkaSecurityValidation(t *testing.T) {
	for _, tc := range []struct{ kafka, want string }{
		{"{brokers: [a:1], sasl: {mechanism: GSSAPI}}", "kafka.sasl.mechanism: want PLAIN"},
		{"{brokers: [a:1], sasl: {mechanism: PLAIN, username: u}}", "kafka.sasl: PLAIN needs username and password"},
		{"{brokers: [a:1], sasl: {mechanism: OAUTHBEARER}}", "kafka.sasl.token: required"},
		{"{brokers: [a:1], tls: {certFile: c.pem}}", "kafka.tls: certFile and keyFile go together"},
		{"{brokers: [a:1], tls: {caFile: ca.pem, verify: false}}", "kafka.tls.verify: unknown key"},
	} {
		doc := strings.Replace(example, "kafka: {brokers: [127.0.0.1:9092]}", "kafka: "+tc.kafka, 1)
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kafka %s: error = %v, want %q", tc.kafka, err, tc.want)
		}
	}
}

func TestLoadRefusesUnwritableWALDir(t *testing.T) {
	dir := t.TempDir()
	aFile := filepath.Join(dir, "file")
	os.WriteFile(aFile, []byte("x"), 0o644)
	for _, tc := range []struct {
		name, wal, want string
	}{
		{"a file", aFile, "not a directory"},
		{"under a file", filepath.Join(aFile, "wal"), "not a directory"},
		{"in /proc", "/proc/ingestor-wal", "is not writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(path, []byte(strings.Replace(example, "/tmp/demo/wal", tc.wal, 1)), 0o644)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), "ingestion.wal.dir: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want ingestion.wal.dir ... %s", err, tc.want)
			}
		})
	}
	// A directory that does not exist yet, under a writable one, is fine.
	path := filepath.Join(dir, "ok.yaml")
	os.WriteFile(path, []byte(strings.Replace(example, "/tmp/demo/wal", filepath.Join(dir, "new", "wal"), 1)), 0o644)
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("the probe left files behind: %v", entries)
	}
}

// maintenance.enabled is true unless the file says false: a benchmark or a
// comparison run switches the maintainer off that way.
func TestMaintenanceEnabled(t *testing.T) {
	base := "ingestion: {wal: {dir: /w}}\nkafka: {brokers: [\"k:9092\"]}\ncatalog: {name: c, type: sql}\n" +
		"datasets: [{name: d, topic: t, table: n.t, customMapping: {id: id}}]\n"
	for name, tc := range map[string]struct {
		doc  string
		want bool
	}{
		"left out":      {base, true},
		"set true":      {base + "maintenance: {enabled: true}\n", true},
		"switched off":  {base + "maintenance: {enabled: false}\n", false},
		"interval only": {base + "maintenance: {intervalSeconds: 5}\n", true},
	} {
		c, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Maintenance.Enabled != tc.want {
			t.Errorf("%s: maintenance.enabled %v, want %v", name, c.Maintenance.Enabled, tc.want)
		}
	}
	if _, err := Parse([]byte(base + "maintenance: {intervalSeconds: -1}\n")); err == nil || !strings.Contains(err.Error(), "maintenance.intervalSeconds") {
		t.Errorf("a negative interval: error %v, want one naming maintenance.intervalSeconds", err)
	}
}

// maintenance.idleCompactionMinutes is 15 unless the file sets it; 0
// switches idle compaction off; a negative value is an error naming it.
func TestIdleCompactionMinutes(t *testing.T) {
	base := "ingestion: {wal: {dir: /w}}\nkafka: {brokers: [\"k:9092\"]}\ncatalog: {name: c, type: sql}\n" +
		"datasets: [{name: d, topic: t, table: n.t, customMapping: {id: id}}]\n"
	for name, tc := range map[string]struct {
		doc  string
		want time.Duration
	}{
		"left out":     {base, 15 * time.Minute},
		"set":          {base + "maintenance: {idleCompactionMinutes: 0.5}\n", 30 * time.Second},
		"switched off": {base + "maintenance: {idleCompactionMinutes: 0}\n", 0},
	} {
		c, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := c.IdleCompaction(); got != tc.want {
			t.Errorf("%s: idle compaction after %v, want %v", name, got, tc.want)
		}
	}
	if _, err := Parse([]byte(base + "maintenance: {idleCompactionMinutes: -1}\n")); err == nil || !strings.Contains(err.Error(), "maintenance.idleCompactionMinutes") {
		t.Errorf("a negative idle time: error %v, want one naming maintenance.idleCompactionMinutes", err)
	}
}
