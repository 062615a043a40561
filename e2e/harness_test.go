package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

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

// env is one test's set of real parts.
type env struct {
	t       *testing.T
	dir     string
	walDir  string
	kafka   *devenv.Kafka
	azurite *devenv.Azurite
	catalog map[string]string
	cfgPath string
	cfg     *config.Config
	metrics map[string]string // role -> host:port
	procs   []*proc
	topic   string
	nParts  int32
	// genOpts are the client options of the test's producers.
	genOpts []kgo.Opt
}

type envOptions struct {
	postgres bool
	// kafkaSASL makes the broker require SASL; the config then reads the
	// password from the environment variable kafkaPasswordEnv.
	kafkaSASL *devenv.SASLUser
	// catalogExtra adds catalog properties to the config.
	catalogExtra map[string]string
}

const demoTopic = "clicks"

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, walDir: filepath.Join(dir, "wal"), topic: demoTopic, nParts: 4}

	k, err := devenv.StartKafka(devenv.KafkaOptions{Partitions: e.nParts, Topics: []string{e.topic}, SASL: o.kafkaSASL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	e.kafka = k

	az, err := devenv.StartAzurite(ctx, filepath.Join(dir, "azurite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Stop() })
	e.azurite = az
	if err := az.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	warehouse := az.Location("warehouse", "wh")
	if o.postgres {
		pg, err := devenv.StartPostgres(ctx, filepath.Join(dir, "pg"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Stop() })
		e.catalog = pg.CatalogProperties(warehouse)
	} else {
		e.catalog = map[string]string{
			"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"),
			"sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": warehouse,
		}
	}
	for k, v := range az.Properties() {
		e.catalog[k] = v
	}
	for k, v := range o.catalogExtra {
		e.catalog[k] = v
	}
	kafkaSASL := ""
	if o.kafkaSASL != nil {
		t.Setenv(kafkaPasswordEnv, o.kafkaSASL.Password)
		kafkaSASL = fmt.Sprintf(", sasl: {mechanism: %s, username: %s, password: '${env:%s}'}", o.kafkaSASL.Mechanism, o.kafkaSASL.User, kafkaPasswordEnv)
		e.genOpts = append(e.genOpts, kgo.SASL(scram.Auth{User: o.kafkaSASL.User, Pass: o.kafkaSASL.Password}.AsSha512Mechanism()))
	}

	ports := freePorts(t, 5)
	e.metrics = map[string]string{
		"supervisor": fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"consumer":   fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"uploader":   fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"committer":  fmt.Sprintf("127.0.0.1:%d", ports[3]),
		"maintainer": fmt.Sprintf("127.0.0.1:%d", ports[4]),
	}
	var b strings.Builder
	fmt.Fprintf(&b, `ingestion:
  commitIntervalSeconds: 1
  drainTimeoutSeconds: 60
  wal: {dir: %q, maxFileAgeMinutes: 0.03, maxFileSizeBytes: 200000}
kafka: {brokers: [%q]%s}
catalog:
  name: e2e
`, e.walDir, k.Addrs()[0], kafkaSASL)
	for key, v := range e.catalog {
		fmt.Fprintf(&b, "  %s: %q\n", key, v)
	}
	fmt.Fprintf(&b, `metrics:
  address: %q
  roles: {consumer: %q, uploader: %q, committer: %q, maintainer: %q}
datasets:
`, e.metrics["supervisor"], e.metrics["consumer"], e.metrics["uploader"], e.metrics["committer"], e.metrics["maintainer"])
	b.WriteString(devenv.ClicksDataset(e.topic))
	e.cfgPath = filepath.Join(dir, "ingestor.yaml")
	if err := os.WriteFile(e.cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	return e
}

// proc is a running ingestor process.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// start runs the ingestor binary with args and the test's config.
func (e *env) start(name string, args ...string) *proc {
	e.t.Helper()
	logf, err := os.Create(filepath.Join(e.dir, name+".log"))
	if err != nil {
		e.t.Fatal(err)
	}
	if !slices.Contains(args, "--config") {
		args = append(args, "--config", e.cfgPath)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logf}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	e.procs = append(e.procs, p)
	e.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		logf.Close()
		if e.t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			e.t.Logf("log of %s (tail):\n%s", name, b)
		}
	})
	return p
}

// stop sends SIGTERM and waits for the exit, which must be 0 within limit.
func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

func (p *proc) wait(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s did not exit within %s", p.name, limit)
	}
	if p.err != nil {
		t.Fatalf("%s exited with %v", p.name, p.err)
	}
	return time.Since(start)
}

// openTable loads the dataset's table through the catalog; the caller
// closes the catalog with the function it returns.
func (e *env) openTable(ctx context.Context) (*table.Table, func(), error) {
	cat, err := tables.OpenCatalog(ctx, e.cfg.Catalog)
	if err != nil {
		return nil, nil, err
	}
	closeCat := func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	}
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("web", "clicks"))
	if err != nil {
		closeCat()
		return nil, nil, err
	}
	return tbl, closeCat, nil
}

// tableRows returns the rows recorded by the current snapshot's summary.
func (e *env) tableRows(ctx context.Context) int64 {
	tbl, closeCat, err := e.openTable(ctx)
	if err != nil {
		return -1
	}
	defer closeCat()
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0
	}
	var n int64
	fmt.Sscan(snap.Summary.Properties["total-records"], &n)
	return n
}

// waitRows waits until the table holds want rows.
func (e *env) waitRows(want int64, limit time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	var got int64
	for time.Now().Before(deadline) {
		if got = e.tableRows(ctx); got >= want {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	e.t.Fatalf("table holds %d rows after %s, want %d", got, limit, want)
}

// scrape reads one role's metrics.
func (e *env) scrape(role string) devenv.Samples {
	e.t.Helper()
	s, err := devenv.Scrape(context.Background(), e.metrics[role])
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// walLeft lists the WAL files still in the directory.
func (e *env) walLeft() []string {
	files, err := walfile.List(e.walDir)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name.String())
	}
	return names
}

// produce sends count records (every badEvery-th one bad) and returns the
// sequence numbers of the good ones and the expected drops by reason.
func (e *env) produce(first, count, badEvery int64) (good []int64, bad map[string]int) {
	e.t.Helper()
	g, err := devenv.NewGenerator(e.kafka.Addrs(), e.topic, e.genOpts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer g.Close()
	g.BadEvery = badEvery
	g.Time = eventTime
	if err := g.Run(context.Background(), first, count); err != nil {
		e.t.Fatal(err)
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
