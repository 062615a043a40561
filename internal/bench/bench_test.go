package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
)

// ingestorBinary returns $INGESTOR_BIN, or builds the binary into a
// temporary directory.
func ingestorBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("INGESTOR_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "ingestor")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/ingestor")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ingestor: %v\n%s", err, out)
	}
	return bin
}

// requiredKeys are the keys issue 5 asks of the result line.
var requiredKeys = []string{
	"shape", "keys", "events", "seconds", "rows_per_sec", "rows_per_cpu_sec", "json_mb_per_cpu_sec",
	"freshness_p50_s", "freshness_p95_s", "freshness_max_s", "files", "file_size_p50_bytes",
	"commits", "peak_rss_bytes", "exactly_once",
}

// TestBenchSmoke runs `ingestor bench` small, as `make bench` runs it big,
// and checks the last line of its output: one JSON object with every key,
// every event exactly once, and figures that hang together.
func TestBenchSmoke(t *testing.T) {
	bin := ingestorBinary(t)
	cases := []struct {
		shape, keys, kafkaKey string
		events                int64
		format                string
	}{
		{"narrow", "uniform", KeyTenant, 20_000, "json"},
		{"wide", "skewed", KeyEvent, 5_000, "json"},
		// Avro behind the Confluent header, through the registry the
		// bench starts (srfake: no registry server can be installed here).
		{"narrow", "uniform", KeyTenant, 20_000, "avro"},
		// Protobuf behind the Confluent header and the message indexes.
		{"narrow", "uniform", KeyTenant, 20_000, "protobuf"},
	}
	for _, c := range cases {
		t.Run(c.shape+"_"+c.keys+"_"+c.format, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(bin, "bench", "--shape", c.shape, "--keys", c.keys, "--kafka-key", c.kafkaKey, "--format", c.format,
				"--events", strconv.FormatInt(c.events, 10), "--tenants", "16",
				"--max-file-age-minutes", "0.05", "--commit-interval-seconds", "1",
				"--out", out, "--timeout", "3m")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			if err != nil {
				log, _ := os.ReadFile(filepath.Join(out, "ingestor.log"))
				if len(log) > 8000 {
					log = log[len(log)-8000:]
				}
				t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s\ningestor log (tail):\n%s", err, &stdout, &stderr, log)
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			last := lines[len(lines)-1]
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(last), &raw); err != nil {
				t.Fatalf("last line is not a JSON object: %v\n%s", err, last)
			}
			for _, k := range requiredKeys {
				if _, ok := raw[k]; !ok {
					t.Errorf("result has no %q", k)
				}
			}
			var r Result
			if err := json.Unmarshal([]byte(last), &r); err != nil {
				t.Fatal(err)
			}
			if !r.ExactlyOnce || r.TableRows != c.events || r.Events != c.events {
				t.Fatalf("exactly_once=%v, table_rows=%d, events=%d, want true, %d, %d (missing %d, duplicated %d, unexpected %d)",
					r.ExactlyOnce, r.TableRows, r.Events, c.events, c.events, r.Missing, r.Duplicated, r.Unexpected)
			}
			if r.Restarts != 0 {
				t.Errorf("the supervisor restarted %d roles", r.Restarts)
			}
			if r.Shape != c.shape || r.Keys != c.keys || r.KafkaKey != c.kafkaKey {
				t.Errorf("result is of %s/%s keyed by %s, want %s/%s keyed by %s", r.Shape, r.Keys, r.KafkaKey, c.shape, c.keys, c.kafkaKey)
			}
			if r.Seconds <= 0 || r.RowsPerSec <= 0 || r.RowsPerCPUSec <= 0 || r.JSONMBPerCPUSec <= 0 || r.CPUSeconds <= 0 {
				t.Errorf("non-positive rate: %+v", r)
			}
			if want := float64(c.events) / r.CPUSeconds; math.Abs(r.RowsPerCPUSec-want) > 0.01*want {
				t.Errorf("rows_per_cpu_sec %v, want events/cpu_seconds %v", r.RowsPerCPUSec, want)
			}
			if !(0 < r.FreshnessP50 && r.FreshnessP50 <= r.FreshnessP95 && r.FreshnessP95 <= r.FreshnessMax) {
				t.Errorf("freshness p50 %v, p95 %v, max %v: want 0 < p50 <= p95 <= max", r.FreshnessP50, r.FreshnessP95, r.FreshnessMax)
			}
			// An event cannot be in the table before it was made, nor later
			// than the whole run.
			if r.FreshnessMax > time.Since(start).Seconds() {
				t.Errorf("freshness max %vs is longer than the run, %s", r.FreshnessMax, time.Since(start))
			}
			if r.Files < 1 || r.Commits < 1 || r.FileSizeP50Bytes <= 0 {
				t.Errorf("files %d, commits %d, file size p50 %d", r.Files, r.Commits, r.FileSizeP50Bytes)
			}
			// Keyed by tenant, the 16 tenants split between tenant-000's
			// Kafka partition and the others; keyed by event, every tenant
			// is in every partition and the split means nothing.
			neighbours, apart := r.NeighbourTenantsFileSizeP50Bytes, r.ApartTenantsFileSizeP50Bytes
			if c.kafkaKey == KeyTenant && (neighbours <= 0 || apart <= 0) ||
				c.kafkaKey == KeyEvent && (neighbours != 0 || apart != 0) {
				t.Errorf("keyed by %s: neighbours' file p50 %d, apart %d", c.kafkaKey, neighbours, apart)
			}
			var byRole float64
			// Upkeep is on by default: the maintainer is sampled too.
			for _, role := range []string{roleSupervisor, roleConsumer, roleUploader, roleCommitter, roleMaintainer} {
				if r.PeakRSSBytes[role] < 1<<20 {
					t.Errorf("peak RSS of %s is %d bytes", role, r.PeakRSSBytes[role])
				}
				byRole += r.CPUSecondsByRole[role]
			}
			if r.CPUSecondsByRole[roleConsumer] <= 0 {
				t.Errorf("the consumer used no CPU: %v", r.CPUSecondsByRole)
			}
			// The sampled CPU per role misses at most each role's last
			// 200 ms; the total comes from the supervisor's rusage.
			if byRole > r.CPUSeconds+0.1 || byRole < 0.5*r.CPUSeconds {
				t.Errorf("CPU by role sums to %v s, the total is %v s", byRole, r.CPUSeconds)
			}
			if _, err := os.Stat(filepath.Join(out, "result.json")); err != nil {
				t.Errorf("no result.json in --out: %v", err)
			}
			t.Logf("bench %s/%s, %d events in %s: %s", c.shape, c.keys, c.events, time.Since(start).Round(time.Second), last)
		})
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as proc(5) allows.
	line := "4242 (ingestor (x) y) S 4200 4242 4200 0 -1 4194560 100 0 0 0 250 75 30 12 20 0 9 0 100 1000 200 rest"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{ppid: 4200, cpu: 3250 * time.Millisecond, children: 420 * time.Millisecond}
	if st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "4242 (x S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 u 12 13 14 15"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
	// This process's own stat parses, with its parent.
	st, err = readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", st.ppid, os.Getppid())
	}
}

func TestParseHWM(t *testing.T) {
	status := "Name:\tingestor\nVmPeak:\t  900 kB\nVmHWM:\t   123456 kB\nVmRSS:\t 100000 kB\n"
	got, err := parseHWM([]byte(status))
	if err != nil || got != 123456<<10 {
		t.Errorf("parseHWM = %d, %v, want %d", got, err, 123456<<10)
	}
	for _, bad := range []string{"Name:\tx\n", "VmHWM:\t12 MB\n", "VmHWM:\tmany kB\n"} {
		if _, err := parseHWM([]byte(bad)); err == nil {
			t.Errorf("parseHWM(%q) accepted", bad)
		}
	}
	if got, err := readHWM(os.Getpid()); err != nil || got <= 0 {
		t.Errorf("readHWM(self) = %d, %v", got, err)
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := []struct {
		q    float64
		want float64
	}{{0, 1}, {0.5, 5}, {0.95, 10}, {0.9, 9}, {1, 10}}
	for _, c := range cases {
		if got := quantile(v, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile([]int64{}, 0.5); got != 0 {
		t.Errorf("quantile of nothing = %v", got)
	}
	if got := quantile([]int64{7}, 0.95); got != 7 {
		t.Errorf("quantile of one = %v", got)
	}
}

func TestConfigYAMLLoads(t *testing.T) {
	// The configuration the benchmark writes must be one the ingestor
	// accepts, for both shapes.
	for _, shape := range []string{"narrow", "wide"} {
		o := DefaultOptions()
		o.Shape = shape
		sh, err := devenv.ShapeByName(shape)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxFileSizeBytes = 1 << 20
		y := configYAML(setup{walDir: t.TempDir(), broker: "127.0.0.1:9092",
			catalog: map[string]string{"type": "sql", "uri": "file:/tmp/x.db", "sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": "file:///tmp/wh"},
			metrics: [5]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}, shape: sh, opts: o, drainSec: 120})
		cfg, err := config.Parse([]byte(y))
		if err != nil {
			t.Fatalf("%s: %v\n%s", shape, err, y)
		}
		ds := cfg.Datasets[0]
		if len(ds.Create.Columns) != len(sh.Columns) || len(ds.CustomMapping) != len(sh.Mapping) {
			t.Errorf("%s: %d columns, %d mapped, want %d", shape, len(ds.Create.Columns), len(ds.CustomMapping), len(sh.Columns))
		}
		if p := ds.Create.Partition; len(p) != 2 || p[0].Transform != "identity" || p[1].Transform != "hour" {
			t.Errorf("%s: partition %+v, want tenant identity and ts hour", shape, p)
		}
		if cfg.Ingestion.WAL.MaxFileAgeMinutes != 0.5 || cfg.Ingestion.CommitIntervalSeconds != 10 || cfg.Ingestion.WAL.MaxFileSizeBytes != 1<<20 {
			t.Errorf("%s: ingestion %+v", shape, cfg.Ingestion)
		}
		// An Avro or Protobuf run reads every column by name through the
		// registry.
		for _, format := range []string{config.FormatAvro, config.FormatProtobuf} {
			y = configYAML(setup{walDir: t.TempDir(), broker: "127.0.0.1:9092",
				catalog: map[string]string{"type": "sql", "uri": "file:/tmp/x.db", "sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": "file:///tmp/wh"},
				metrics: [5]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}, shape: sh, opts: o, drainSec: 120,
				format: format, registry: "http://127.0.0.1:8081"})
			if cfg, err = config.Parse([]byte(y)); err != nil {
				t.Fatalf("%s %s: %v\n%s", shape, format, err, y)
			}
			if ds := cfg.Datasets[0]; ds.Format != format || len(ds.CustomMapping) != 0 || cfg.RegistryFor(ds) == nil {
				t.Errorf("%s %s: format %q, %d mapped, registry %v", shape, format, ds.Format, len(ds.CustomMapping), cfg.RegistryFor(ds))
			}
		}
	}
}

func TestConfigYAMLMaintenance(t *testing.T) {
	// maintenance.enabled is written only when asked for, so a plain run
	// keeps the ingestor's default (upkeep on); the flag's value must reach
	// the parsed configuration.
	sh, err := devenv.ShapeByName("narrow")
	if err != nil {
		t.Fatal(err)
	}
	render := func(m *bool) string {
		o := SoakOptions()
		o.Maintenance = m
		return configYAML(setup{walDir: t.TempDir(), broker: "127.0.0.1:9092",
			catalog: map[string]string{"type": "sql", "uri": "file:/tmp/x.db", "sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": "file:///tmp/wh"},
			metrics: [5]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}, shape: sh, opts: o, drainSec: 120})
	}
	y := render(nil)
	if strings.Contains(y, "maintenance") {
		t.Errorf("maintenance written though not asked for:\n%s", y)
	}
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ingestion.CommitIntervalSeconds != 0.18 || cfg.Ingestion.WAL.MaxFileAgeMinutes != 0.01 {
		t.Errorf("soak ingestion %+v, want a commit every 0.18 s and files of 0.6 s", cfg.Ingestion)
	}
	for _, v := range []bool{true, false} {
		want := "\nmaintenance: {enabled: false}\n"
		if v {
			// Upkeep fast-forwarded with the commits, idle
			// compaction's 15 minutes too.
			want = "\nmaintenance: {enabled: true, intervalSeconds: 0.54, idleCompactionMinutes: 0.135}\n"
		}
		y := render(&v)
		if !strings.Contains(y, want) {
			t.Errorf("maintenance %v: no %q in\n%s", v, want, y)
		}
		cfg, err := config.Parse([]byte(y))
		if err != nil {
			t.Fatalf("maintenance %v: %v", v, err)
		}
		if cfg.Maintenance.Enabled != v {
			t.Errorf("maintenance %v: parsed enabled %v", v, cfg.Maintenance.Enabled)
		}
	}
}

func TestFreshDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	if err := freshDir(dir); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if err := freshDir(dir); err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := freshDir(dir); err == nil {
		t.Fatal("a directory with an earlier run's catalog was accepted")
	}
}

// TestBenchSoakSmoke runs a short soak run and checks that its result
// carries the checkpoints, taken on the soak settings, and that their
// health agrees with the scored table.
func TestBenchSoakSmoke(t *testing.T) {
	bin := ingestorBinary(t)
	out := t.TempDir()
	// --events is ignored by a soak: 1,000 events are a fifth of a second
	// of the soak's rate, far fewer than 20 commits need.
	r := runBench(t, bin, "--soak-commits", "20", "--soak-checkpoints", "2", "--events", "1000", "--out", out, "--timeout", "3m")
	if !r.ExactlyOnce || r.Events <= 1000 || r.TableRows != r.Events {
		t.Fatalf("exactly_once=%v, events %d, table rows %d", r.ExactlyOnce, r.Events, r.TableRows)
	}
	if r.SoakCommits != 20 || r.Tenants != 16 || r.Partitions != 4 || r.Rate != 5000 || r.CommitIntervalSeconds != 0.18 || r.MaxFileAgeMinutes != 0.01 {
		t.Errorf("soak settings: %d commits, %d tenants, %d partitions, rate %d, commit %gs, file age %g min",
			r.SoakCommits, r.Tenants, r.Partitions, r.Rate, r.CommitIntervalSeconds, r.MaxFileAgeMinutes)
	}
	// Checkpoints at 10 and 20 commits, and one after the stop.
	if len(r.Checkpoints) != 3 || r.Health == nil {
		t.Fatalf("%d checkpoints, health %v, want 3 and the last", len(r.Checkpoints), r.Health)
	}
	for i, h := range r.Checkpoints {
		if (i < 2 && h.Commits < 10*(i+1)) || (i > 0 && h.Commits < r.Checkpoints[i-1].Commits) {
			t.Errorf("checkpoint %d at %d commits", i, h.Commits)
		}
	}
	h := r.Health
	if h.DataFiles != r.Files || h.ScanPlanTableFiles != r.Files || h.Snapshots < 1 || h.Manifests < 1 {
		t.Errorf("health: %d data files, %d planned, %d snapshots, %d manifests; the table has %d files",
			h.DataFiles, h.ScanPlanTableFiles, h.Snapshots, h.Manifests, r.Files)
	}
	if h.MetadataJSONBytes <= 0 || h.MetadataDirBytes <= h.MetadataJSONBytes || h.MetadataJSONFiles < 2 {
		t.Errorf("metadata.json %d B, dir %d B, %d versions", h.MetadataJSONBytes, h.MetadataDirBytes, h.MetadataJSONFiles)
	}
	if h.ScanPlanPartitionFiles < 1 || h.ScanPlanPartitionFiles > h.ScanPlanTableFiles || h.WriteAmplification < 1 || h.BytesAppended <= 0 {
		t.Errorf("partition plan %d files, write amplification %v, appended %d B", h.ScanPlanPartitionFiles, h.WriteAmplification, h.BytesAppended)
	}
	if r.CommitFirst100P50Ms <= 0 || r.CommitFirst100P95Ms < r.CommitFirst100P50Ms {
		t.Errorf("first commits p50 %v ms, p95 %v ms", r.CommitFirst100P50Ms, r.CommitFirst100P95Ms)
	}
}

// runBench runs `ingestor bench` with args and returns the result it
// printed last on stdout.
func runBench(t *testing.T, bin string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"bench"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
