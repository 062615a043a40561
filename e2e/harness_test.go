package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// This file is the harness of every test that runs the built binary: one
// world of real parts (a Kafka-protocol broker, Azurite, a catalog) shared
// by one or more ingestor instances, each with its own WAL directory and
// configuration, whose processes the tests start, kill and stop.

var binary string

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run builds the binary unless INGESTOR_BIN names one, runs the tests and
// removes the build: in a function of its own so that the deferred
// removal runs before os.Exit, which skips deferred calls.
func run(m *testing.M) int {
	binary = os.Getenv("INGESTOR_BIN")
	if binary == "" {
		dir, err := os.MkdirTemp("", "ingestor-e2e")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "ingestor")
		cmd := exec.Command("go", "build", "-o", binary, "../cmd/ingestor")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build ingestor:", err)
			return 1
		}
	}
	return m.Run()
}

// handedOut holds every port freePorts returned: instances of parallel
// subtests take ports at once, and a port closed by one call must not be
// handed to another before its process binds it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePorts returns n distinct free loopback ports, none returned before
// in this test binary.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Held open until the end, so that the kernel gives each a new port.
		ls = append(ls, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports
}

// world is a Kafka-protocol broker, Azurite and a catalog.
type world struct {
	t       *testing.T
	dir     string
	kafka   *devenv.Kafka
	kopts   devenv.KafkaOptions
	broker  string
	az      *devenv.Azurite
	pg      *devenv.Postgres
	catalog map[string]string
	// sasl is the kafka.sasl block of the instances' configs, "" without
	// SASL; genOpts are the client options of the test's producers.
	sasl    string
	genOpts []kgo.Opt

	mu    sync.Mutex
	procs []*xproc
}

type worldOptions struct {
	// topics are created with partitions partitions each.
	topics     []string
	partitions int32
	// postgres puts the catalog in PostgreSQL instead of SQLite.
	postgres bool
	// restartableKafka persists the broker's records and offsets, so
	// that restartKafka can bring it back on the same port.
	restartableKafka bool
	// kafkaSASL makes the broker require SASL; the configs then read the
	// password from the environment variable kafkaPasswordEnv.
	kafkaSASL *devenv.SASLUser
	// catalogExtra adds catalog properties to the configs.
	catalogExtra map[string]string
	// fileWarehouse puts the warehouse on the local disk (file://, under
	// warehouseDir) instead of Azurite, which is then not started: a test
	// can set the objects' times there, as an outage of days would.
	fileWarehouse bool
}

// kafkaPasswordEnv holds the Kafka password of SASL test configs.
const kafkaPasswordEnv = "INGESTOR_E2E_KAFKA_PASSWORD"

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, dir: t.TempDir()}
	w.kopts = devenv.KafkaOptions{Partitions: o.partitions, Topics: o.topics, SASL: o.kafkaSASL}
	if o.restartableKafka {
		w.kopts.Port = freePorts(t, 1)[0]
		w.kopts.DataDir = filepath.Join(w.dir, "kafka")
	}
	k, err := devenv.StartKafka(w.kopts)
	if err != nil {
		t.Fatal(err)
	}
	w.kafka = k
	w.broker = k.Addrs()[0]
	t.Cleanup(func() { w.kafka.Close() })

	warehouse := "file://" + w.warehouseDir()
	if !o.fileWarehouse {
		az, err := devenv.StartAzurite(ctx, filepath.Join(w.dir, "azurite"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { az.Stop() })
		w.az = az
		if err := az.CreateContainer(ctx, "warehouse"); err != nil {
			t.Fatal(err)
		}
		warehouse = az.Location("warehouse", "wh")
	}
	if o.postgres {
		pg, err := devenv.StartPostgres(ctx, filepath.Join(w.dir, "pg"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Stop() })
		w.pg = pg
		w.catalog = pg.CatalogProperties(warehouse)
	} else {
		w.catalog = map[string]string{
			"type": "sql", "uri": "file:" + filepath.Join(w.dir, "catalog.db"),
			"sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": warehouse,
		}
	}
	if w.az != nil {
		for k, v := range w.az.Properties() {
			w.catalog[k] = v
		}
	}
	for k, v := range o.catalogExtra {
		w.catalog[k] = v
	}
	if u := o.kafkaSASL; u != nil {
		// The test process loads the configs too, so the variable is its own.
		t.Setenv(kafkaPasswordEnv, u.Password)
		w.sasl = fmt.Sprintf(", sasl: {mechanism: %s, username: %s, password: '${env:%s}'}", u.Mechanism, u.User, kafkaPasswordEnv)
		w.genOpts = append(w.genOpts, kgo.SASL(scram.Auth{User: u.User, Pass: u.Password}.AsSha512Mechanism()))
	}
	// Processes die before the parts they talk to are stopped.
	t.Cleanup(w.killAll)
	return w
}

// warehouseDir is the directory of a world with fileWarehouse.
func (w *world) warehouseDir() string { return filepath.Join(w.dir, "warehouse") }

// restartKafka closes the broker and starts a new one on the same port and
// data directory, after down.
func (w *world) restartKafka(down time.Duration) {
	w.t.Helper()
	w.kafka.Close()
	time.Sleep(down)
	k, err := devenv.StartKafka(w.kopts)
	if err != nil {
		w.t.Fatalf("restart kafka: %v", err)
	}
	w.kafka = k
}

// dataset is one topic read into one table.
type dataset struct {
	topic string
	table string // namespace.name
	// yaml is the dataset's entry in the config; "" for the narrow
	// mapping of the crash tests (see newInstanceFor).
	yaml string
}

func datasetOf(topic string) dataset { return dataset{topic: topic, table: "crash." + topic} }

// clicksTable is the table of clicksDataset.
const clicksTable = "web.clicks"

// clicksDataset is the dataset `ingestor demo` runs, named clicks: every
// field of the generator's events, nested ones included, into web.clicks.
func clicksDataset(topic string) dataset {
	return dataset{topic: topic, table: clicksTable, yaml: devenv.ClicksDataset(topic)}
}

// newClicks is a world with the topic clicks of four partitions and one
// instance that reads it with clicksDataset, its rotation limits those of
// the record-path tests.
func newClicks(t *testing.T, o worldOptions) (*world, *instance) {
	t.Helper()
	o.topics, o.partitions = []string{clicksTopic}, 4
	w := newWorld(t, o)
	return w, w.newInstance("clicks", clicksOptions())
}

// clicksTopic is the topic of newClicks.
const clicksTopic = "clicks"

// clicksOptions are the options of an instance of newClicks.
func clicksOptions() instanceOptions {
	return instanceOptions{datasets: []dataset{clicksDataset(clicksTopic)}, maxFileSizeBytes: 200000}
}

// instanceOptions configure one ingestor instance.
type instanceOptions struct {
	datasets []dataset
	// maxFileAgeMinutes and maxFileSizeBytes are the rotation limits.
	maxFileAgeMinutes float64
	maxFileSizeBytes  int64
	commitInterval    float64
	// upkeep makes the maintainer work as soon as there is work (see
	// newInstance); without it the maintainer runs with its defaults.
	upkeep bool
	// compactionFanIn is maintenance.compactionFanIn; 0 leaves compaction off.
	compactionFanIn int
	// idleCompactionMinutes is maintenance.idleCompactionMinutes with
	// upkeep; 0 leaves the default.
	idleCompactionMinutes float64
	// maxManifests is maintenance.maxManifests with upkeep; 0 is 1, a
	// manifest rewrite at nearly every pass.
	maxManifests int
	// stallTimeoutSeconds is ingestion.stallTimeoutSeconds and
	// diskHighWatermarkPct ingestion.wal.diskHighWatermarkPct; 0 keeps the
	// default.
	stallTimeoutSeconds  float64
	diskHighWatermarkPct int
	// env is added to the environment of every process of the instance.
	env []string
	// leaseSessionTimeoutSeconds is maintenance.leaseSessionTimeoutSeconds;
	// 0 keeps the default.
	leaseSessionTimeoutSeconds float64
}

// instance is one ingestor deployment: a WAL directory and a config file,
// run as `ingestor run` or as the three roles apart.
type instance struct {
	w *world
	// t is the test that owns the instance: the world's test, or the
	// subtest newInstanceFor was given, so that instances of parallel
	// subtests fail and log in their own subtest.
	t       *testing.T
	name    string
	dir     string
	walDir  string
	cfgPath string
	cfg     *config.Config
	metrics map[string]string
	env     []string

	mu    sync.Mutex
	procs map[string]*xproc // "run", or a role name
}

func (w *world) newInstance(name string, o instanceOptions) *instance {
	w.t.Helper()
	return w.newInstanceFor(w.t, name, o)
}

// newInstanceFor is newInstance for an instance owned by the subtest t.
func (w *world) newInstanceFor(t *testing.T, name string, o instanceOptions) *instance {
	t.Helper()
	if o.maxFileAgeMinutes == 0 {
		o.maxFileAgeMinutes = 0.03
	}
	if o.maxFileSizeBytes == 0 {
		o.maxFileSizeBytes = 4 << 20
	}
	if o.commitInterval == 0 {
		o.commitInterval = 1
	}
	in := &instance{w: w, t: t, name: name, dir: filepath.Join(w.dir, name), env: o.env, procs: map[string]*xproc{}}
	in.walDir = filepath.Join(in.dir, "wal")
	if err := os.MkdirAll(in.walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 5)
	in.metrics = map[string]string{}
	for i, r := range []string{"supervisor", "consumer", "uploader", "committer", "maintainer"} {
		in.metrics[r] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ingestion:\n  commitIntervalSeconds: %g\n  drainTimeoutSeconds: 60\n", o.commitInterval)
	if o.stallTimeoutSeconds > 0 {
		fmt.Fprintf(&b, "  stallTimeoutSeconds: %g\n", o.stallTimeoutSeconds)
	}
	watermark := ""
	if o.diskHighWatermarkPct > 0 {
		watermark = fmt.Sprintf(", diskHighWatermarkPct: %d", o.diskHighWatermarkPct)
	}
	fmt.Fprintf(&b, `  wal: {dir: %q, maxFileAgeMinutes: %g, maxFileSizeBytes: %d%s}
kafka: {brokers: [%q]%s}
catalog:
  name: crash
`, in.walDir, o.maxFileAgeMinutes, o.maxFileSizeBytes, watermark, w.broker, w.sasl)
	for k, v := range w.catalog {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	// With upkeep, the maintainer upkeeps every second, keeps one
	// snapshot older than 3 s and rewrites the manifests as soon as there
	// are two, so that expiry and manifest rewrites run between the
	// appends of the test, as they do over a month of a real table.
	upkeepProps := ""
	lease := ""
	if o.leaseSessionTimeoutSeconds > 0 {
		lease = fmt.Sprintf(", leaseSessionTimeoutSeconds: %g", o.leaseSessionTimeoutSeconds)
	}
	if !o.upkeep && lease != "" {
		fmt.Fprintf(&b, "maintenance: {%s}\n", lease[2:])
	}
	if o.upkeep {
		idle := ""
		if o.idleCompactionMinutes > 0 {
			idle = fmt.Sprintf(", idleCompactionMinutes: %g", o.idleCompactionMinutes)
		}
		fmt.Fprintf(&b, "maintenance: {intervalSeconds: 1, maxManifests: %d, compactionFanIn: %d%s%s}\n", max(o.maxManifests, 1), o.compactionFanIn, idle, lease)
		upkeepProps = `      properties: {history.expire.max-snapshot-age-ms: "3000", history.expire.min-snapshots-to-keep: "1"}
`
	}
	fmt.Fprintf(&b, "metrics:\n  address: %q\n  roles: {consumer: %q, uploader: %q, committer: %q, maintainer: %q}\ndatasets:\n",
		in.metrics["supervisor"], in.metrics["consumer"], in.metrics["uploader"], in.metrics["committer"], in.metrics["maintainer"])
	for _, d := range o.datasets {
		if d.yaml != "" {
			b.WriteString(d.yaml)
			continue
		}
		fmt.Fprintf(&b, `  - name: %s
    topic: %s
    table: %s
    consumerGroup: ingestor-%s
    customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts, country: geo.country, kind: kind, amount: amount}
    bloomFilterColumns: [event_id]
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
        - {name: country, type: string}
        - {name: kind, type: string}
        - {name: amount, type: double}
      partition:
        - {column: tenant, transform: identity}
        - {column: ts, transform: day}
%s`, d.topic, d.topic, d.table, d.topic, upkeepProps)
	}
	in.cfgPath = filepath.Join(in.dir, "ingestor.yaml")
	if err := os.WriteFile(in.cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(in.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in.cfg = cfg
	return in
}

// xproc is one running ingestor process.
type xproc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (p *xproc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process.
func (p *xproc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// wait waits up to limit for the process to exit, with code 0 or one of
// also, and returns how long it waited.
func (p *xproc) wait(t *testing.T, limit time.Duration, also ...int) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-time.After(limit):
			t.Fatalf("%s did not exit within %s", p.name, limit)
		}
	}
	if code := p.exitCode(); code != 0 && !slices.Contains(also, code) {
		t.Fatalf("%s exited with code %d (%v)", p.name, code, p.err)
	}
	return time.Since(start)
}

// exitCode returns the process's exit code, -1 if a signal ended it.
func (p *xproc) exitCode() int {
	<-p.done
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -2
	}
	return 0
}

// start starts `ingestor <what> --config` for the instance; what is "run"
// or a role. Its output is appended to <instance dir>/<what>.log.
func (in *instance) start(what string) *xproc {
	in.t.Helper()
	logf, err := os.OpenFile(filepath.Join(in.dir, what+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		in.t.Fatal(err)
	}
	cmd := exec.Command(binary, what, "--config", in.cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The children of `run` inherit this environment.
	cmd.Env = append(os.Environ(), in.env...)
	if err := cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	logf.Close() // the child holds its own descriptor
	p := &xproc{name: in.name + "/" + what, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	in.mu.Lock()
	in.procs[what] = p
	in.mu.Unlock()
	in.w.mu.Lock()
	in.w.procs = append(in.w.procs, p)
	in.w.mu.Unlock()
	return p
}

// proc returns the last process started for what.
func (in *instance) proc(what string) *xproc {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.procs[what]
}

// stop sends SIGTERM to every running process of the instance and waits
// for each to exit with code 0 within limit.
func (in *instance) stop(t *testing.T, limit time.Duration) {
	t.Helper()
	in.awaitExit(t, in.terminate(), limit)
}

// terminate sends SIGTERM to every running process of the instance and
// returns them.
func (in *instance) terminate() []*xproc {
	in.mu.Lock()
	var ps []*xproc
	for _, p := range in.procs {
		if p.running() {
			ps = append(ps, p)
		}
	}
	in.mu.Unlock()
	for _, p := range ps {
		p.signal(syscall.SIGTERM)
	}
	return ps
}

// awaitExit waits for each process to exit within limit of the call, with
// code 0 or one of also.
func (in *instance) awaitExit(t *testing.T, ps []*xproc, limit time.Duration, also ...int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for _, p := range ps {
		p.wait(t, time.Until(deadline), also...)
	}
}

// scrape reads the metrics of one of the instance's processes
// ("supervisor" or a role); a failure fails the test.
func (in *instance) scrape(role string) devenv.Samples {
	in.t.Helper()
	s, err := devenv.Scrape(context.Background(), in.metrics[role])
	if err != nil {
		in.t.Fatal(err)
	}
	return s
}

// peek is scrape for a process that may not answer: no samples then.
func (in *instance) peek(role string) devenv.Samples {
	s, err := devenv.Scrape(context.Background(), in.metrics[role])
	if err != nil {
		return devenv.Samples{}
	}
	return s
}

// waitReady waits until the metrics endpoint of each running process of
// the instance answers. A process opens it just before it sets up its
// SIGTERM handler; a SIGTERM before that ends the process at once.
func (in *instance) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	in.mu.Lock()
	var whats []string
	for what, p := range in.procs {
		if p.running() {
			whats = append(whats, what)
		}
	}
	in.mu.Unlock()
	deadline := time.Now().Add(limit)
	for _, what := range whats {
		addr := in.metrics[what]
		if what == "run" {
			addr = in.metrics["supervisor"]
		}
		for {
			if _, err := devenv.Scrape(context.Background(), addr); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s: metrics at %s do not answer after %s", in.name, what, addr, limit)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond)
}

// killAll SIGKILLs every process still running, children of supervisors
// first, at the end of a test.
func (w *world) killAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		if p.running() {
			for _, c := range childPIDs(p.cmd.Process.Pid) {
				syscall.Kill(c, syscall.SIGKILL)
			}
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// log returns the instance's log of what.
func (in *instance) log(what string) string {
	b, _ := os.ReadFile(filepath.Join(in.dir, what+".log"))
	return string(b)
}

// dumpLogs prints the tail of each log of the instance when the test failed.
func (in *instance) dumpLogs() {
	if !in.t.Failed() {
		return
	}
	for _, what := range []string{"run", "consumer", "uploader", "committer"} {
		b := in.log(what)
		if b == "" {
			continue
		}
		if len(b) > 15000 {
			b = b[len(b)-15000:]
		}
		in.t.Logf("log of %s/%s (tail):\n%s", in.name, what, b)
	}
}

// childPIDs returns the children of pid, read from /proc.
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// roleOf returns the subcommand a process runs (its first argument).
func roleOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := bytes.Split(b, []byte{0})
	if len(args) < 2 {
		return ""
	}
	return string(args[1])
}

// generator returns a producer of the generator's events to topic; the
// caller closes it.
func (w *world) generator(topic string) (*devenv.Generator, error) {
	return devenv.NewGenerator([]string{w.broker}, topic, w.genOpts...)
}

// produce sends count events numbered from first to topic at rate events
// per second (0: at once), event seq timed by at.
func (w *world) produce(ctx context.Context, topic string, first, count int64, rate int, at func(int64) time.Time) error {
	g, err := w.generator(topic)
	if err != nil {
		return err
	}
	defer g.Close()
	g.Rate = rate
	g.Time = at
	return g.Run(ctx, first, count)
}

// produceMixed sends count records numbered from first to topic at once,
// timed by eventTime, every badEvery-th one bad (0: none), and returns the
// sequence numbers of the good ones and the expected drops by reason.
func (w *world) produceMixed(t *testing.T, topic string, first, count, badEvery int64) (good []int64, bad map[string]int) {
	t.Helper()
	g, err := w.generator(topic)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.BadEvery = badEvery
	g.Time = eventTime
	if err := g.Run(context.Background(), first, count); err != nil {
		t.Fatal(err)
	}
	bad = map[string]int{}
	for seq := first; seq < first+count; seq++ {
		if badEvery > 0 && seq%badEvery == badEvery-1 {
			bad[devenv.BadReason(seq)]++
			continue
		}
		good = append(good, seq)
	}
	return good, bad
}

// openTable loads a table through the world's catalog.
func (w *world) openTable(ctx context.Context, name string) (*table.Table, func(), error) {
	cat, err := tables.OpenCatalog(ctx, config.Catalog{Name: "crash", Properties: w.catalog})
	if err != nil {
		return nil, nil, err
	}
	closeCat := func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	}
	ns, tbl, _ := strings.Cut(name, ".")
	t, err := cat.LoadTable(ctx, catalog.ToIdentifier(ns, tbl))
	if err != nil {
		closeCat()
		return nil, nil, err
	}
	return t, closeCat, nil
}

// tableRows returns the rows the table's current snapshot records, -1 if
// the table cannot be loaded.
func (w *world) tableRows(ctx context.Context, name string) int64 {
	tbl, closeCat, err := w.openTable(ctx, name)
	if err != nil {
		return -1
	}
	defer closeCat()
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
	return n
}

// waitRows waits until every table holds at least want[table] rows.
func (w *world) waitRows(t *testing.T, want map[string]int64, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	for {
		short := ""
		for name, n := range want {
			if got := w.tableRows(ctx, name); got < n {
				short = fmt.Sprintf("%s holds %d rows, want %d", name, got, n)
				break
			}
		}
		if short == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, short)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// exactlyOnce scans the table's event_id column and compares it with the
// events numbered first..first+count-1: it returns how many are missing,
// how many are there more than once, and how many rows are not expected.
func (w *world) exactlyOnce(t *testing.T, name string, first, count int64) (missing, duplicated, unexpected int, rows int64) {
	t.Helper()
	ctx := context.Background()
	tbl, closeCat, err := w.openTable(ctx, name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer closeCat()
	at, err := tbl.Scan(table.WithSelectedFields("event_id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %s: %v", name, err)
	}
	defer at.Release()
	seen := make([]uint8, count)
	for _, chunk := range at.Column(0).Data().Chunks() {
		ids := chunk.(*array.String)
		for i := 0; i < ids.Len(); i++ {
			id := ids.Value(i)
			seq, err := strconv.ParseInt(strings.TrimPrefix(id, "evt-"), 10, 64)
			if err != nil || !strings.HasPrefix(id, "evt-") || seq < first || seq >= first+count {
				unexpected++
				continue
			}
			if seen[seq-first] < 255 {
				seen[seq-first]++
			}
		}
	}
	for _, n := range seen {
		switch {
		case n == 0:
			missing++
		case n > 1:
			duplicated++
		}
	}
	return missing, duplicated, unexpected, at.NumRows()
}

// walLeft lists the ready, active and uploaded files left in a WAL dir.
func walLeft(t *testing.T, dir string) []string {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name.String())
	}
	return names
}
