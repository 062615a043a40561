package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/walfile"
)

// buildDir holds the ingestor built for the tests; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// ingestorBinary builds the ingestor once per test binary, unless
// INGESTOR_BIN names one (make test-e2e builds it first).
var ingestorBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("INGESTOR_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "ingestor-status-test")
	if err != nil {
		return "", err
	}
	buildDir = dir
	bin := filepath.Join(dir, "ingestor")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ingestor").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build ingestor: %v\n%s", err, out)
	}
	return bin, nil
})

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// liveConfig is a real ingestor's configuration: kfake, a SQLite catalog,
// a file warehouse, fast rotation and commits, and a planted secret among
// the catalog properties.
func liveConfig(dir, broker string, ports []int) string {
	return fmt.Sprintf(`ingestion:
  commitIntervalSeconds: 1
  drainTimeoutSeconds: 30
  wal: {dir: %q, maxFileAgeMinutes: 0.03}
kafka: {brokers: [%q]}
catalog:
  name: status
  type: sql
  uri: "file:%s"
  sql.driver: sqlite
  sql.dialect: sqlite
  warehouse: "file://%s"
  credential: "client-id:%s"
metrics:
  address: "127.0.0.1:%d"
  roles: {consumer: "127.0.0.1:%d", uploader: "127.0.0.1:%d", committer: "127.0.0.1:%d"}
datasets:
  - name: clicks
    topic: clicks
    table: web.clicks
    customMapping:
      event_id: id
      tenant: meta.tenant
      ts: meta.ts
      amount: amount
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
        - {name: amount, type: double}
      partition:
        - {column: tenant, transform: identity}
`, filepath.Join(dir, "wal"), broker, filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse"), planted,
		ports[0], ports[1], ports[2], ports[3])
}

// live is a running ingestor (`ingestor run`) and what it reads from.
type live struct {
	t       *testing.T
	bin     string
	dir     string
	cfgPath string
	kafka   *devenv.Kafka
	cmd     *exec.Cmd
	done    chan error
	log     *os.File
	ports   []int
}

func startLive(t *testing.T) *live {
	t.Helper()
	bin, err := ingestorBinary()
	if err != nil {
		t.Fatal(err)
	}
	l := &live{t: t, bin: bin, dir: t.TempDir(), done: make(chan error, 1)}
	l.kafka, err = devenv.StartKafka(devenv.KafkaOptions{Partitions: 3, Topics: []string{"clicks"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.kafka.Close)
	l.ports = freePorts(t, 4)
	l.cfgPath = filepath.Join(l.dir, "ingestor.yaml")
	if err := os.WriteFile(l.cfgPath, []byte(liveConfig(l.dir, l.kafka.Addrs()[0], l.ports)), 0o644); err != nil {
		t.Fatal(err)
	}
	walDir := filepath.Join(l.dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Files of a topic no dataset reads: every role leaves them alone, so
	// the status must count them exactly.
	// The consumer makes the directory's id before it writes a segment.
	if _, err := walfile.WALID(walDir); err != nil {
		t.Fatal(err)
	}
	writeWAL(t, walDir, walfile.Name{State: walfile.Ready, Topic: "stray", Partition: 1, Start: 0, End: 4}, 300)
	writeWAL(t, walDir, walfile.Name{State: walfile.Uploaded, Topic: "stray", Partition: 1, Start: 0, End: 4}, 20)

	l.log, err = os.Create(filepath.Join(l.dir, "ingestor.log"))
	if err != nil {
		t.Fatal(err)
	}
	l.cmd = exec.Command(bin, "run", "--config", l.cfgPath)
	l.cmd.Stdout, l.cmd.Stderr = l.log, l.log
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = l.cmd.Process.Kill()
			<-l.done
		}
		l.log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(l.log.Name())
			if len(b) > 30000 {
				b = b[len(b)-30000:]
			}
			t.Logf("ingestor log (tail):\n%s", b)
		}
	})
	return l
}

// status runs `ingestor status` with args and returns its stdout.
func (l *live) status(args ...string) []byte {
	l.t.Helper()
	cmd := exec.Command(l.bin, append([]string{"status", "--config", l.cfgPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		l.t.Fatalf("ingestor status %v: %v\n%s", args, err, stderr.String())
	}
	if bytes.Contains(stdout.Bytes(), []byte(planted)) || bytes.Contains(stderr.Bytes(), []byte(planted)) {
		l.t.Fatalf("ingestor status %v printed the planted secret:\n%s%s", args, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

func (l *live) report() *Report {
	l.t.Helper()
	var r Report
	out := l.status("--output", "json")
	if err := json.Unmarshal(out, &r); err != nil {
		l.t.Fatalf("decode status JSON: %v\n%s", err, out)
	}
	return &r
}

// waitReport asks for the status until ok accepts it.
func (l *live) waitReport(what string, within time.Duration, ok func(*Report) bool) *Report {
	l.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := l.report()
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(r, "", "  ")
			l.t.Fatalf("%s: not within %s; last status:\n%s", what, within, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func proc(r *Report, name string) Process {
	for _, p := range r.Processes {
		if p.Name == name {
			return p
		}
	}
	return Process{}
}

func allUp(r *Report) bool {
	for _, p := range r.Processes {
		if p.State != StateUp {
			return false
		}
		if p.Name != "supervisor" && (p.SupervisorUp == nil || !*p.SupervisorUp) {
			return false
		}
	}
	return true
}

func TestStatusOfRunningIngestor(t *testing.T) {
	l := startLive(t)
	l.waitReport("all processes up", 60*time.Second, allUp)

	// A stream of 2400 events, every 8th one bad, over about 6 s.
	const total, badEvery = 2400, 8
	wantDropped := map[string]float64{}
	for seq := int64(0); seq < total; seq++ {
		if seq%badEvery == badEvery-1 {
			wantDropped[devenv.BadReason(seq)]++
		}
	}
	gen, err := devenv.NewGenerator(l.kafka.Addrs(), "clicks")
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	gen.Rate, gen.BadEvery = 400, badEvery
	genDone := make(chan error, 1)
	go func() { genDone <- gen.Run(context.Background(), 0, total) }()

	during := l.waitReport("events flowing", 30*time.Second, func(r *Report) bool {
		d := r.Datasets[0]
		return d.EventsPerSecond != nil && *d.EventsPerSecond > 0
	})
	if !allUp(during) {
		t.Errorf("a process is not up while events flow: %+v", during.Processes)
	}
	for _, p := range during.Processes {
		if p.Name != "supervisor" && (p.Restarts == nil || *p.Restarts != 0 || p.PID == 0) {
			t.Errorf("%s: restarts %v, pid %d; want 0 restarts and a pid", p.Name, p.Restarts, p.PID)
		}
	}
	// The supervisor tells its own PID and uptime on its /status, and
	// each child's uptime.
	for _, p := range during.Processes {
		if p.PID == 0 || p.UptimeSeconds == nil || *p.UptimeSeconds <= 0 {
			t.Errorf("%s: pid %d, uptime %v; want a pid and an uptime", p.Name, p.PID, p.UptimeSeconds)
		}
	}
	if sup, cons := proc(during, "supervisor"), proc(during, "consumer"); sup.UptimeSeconds != nil && cons.UptimeSeconds != nil && *sup.UptimeSeconds < *cons.UptimeSeconds {
		t.Errorf("supervisor uptime %v below its consumer's %v", *sup.UptimeSeconds, *cons.UptimeSeconds)
	}
	if d := during.Datasets[0]; d.Name != "clicks" || d.Topic != "clicks" || d.Table != "web.clicks" ||
		d.Paused == nil || *d.Paused || d.SegmentsOpen == nil || d.LagTotal == nil {
		t.Errorf("dataset while streaming = %+v", d)
	}
	if v := during.Volume; v.UsedPct == nil || v.Paused == nil || *v.Paused || v.HighWatermarkPct != 80 {
		t.Errorf("volume = %+v", v)
	}
	if err := <-genDone; err != nil {
		t.Fatal(err)
	}

	// Every record consumed, every bad one dropped with its reason, every
	// segment rotated, uploaded and committed: only the stray files stay.
	done := l.waitReport("stream committed", 90*time.Second, func(r *Report) bool {
		d := r.Datasets[0]
		return d.DroppedTotal != nil && *d.DroppedTotal == total/badEvery && d.LastCommit != nil &&
			d.WAL == (WALStates{}) && d.LagTotal != nil && *d.LagTotal == 0
	})
	d := done.Datasets[0]
	for reason, n := range wantDropped {
		if d.Dropped[reason] != n {
			t.Errorf("dropped[%s] = %v, want %v (all: %v)", reason, d.Dropped[reason], n, d.Dropped)
		}
	}
	if len(d.Dropped) != len(wantDropped) {
		t.Errorf("dropped reasons = %v, want %v", d.Dropped, wantDropped)
	}
	if len(d.Lag) != 3 {
		t.Errorf("lag of %d partitions, want 3: %v", len(d.Lag), d.Lag)
	}
	if d.LastCommitError != nil {
		t.Errorf("last commit error = %+v, want none", d.LastCommitError)
	}
	if d.LastCommitAgeSeconds == nil || *d.LastCommitAgeSeconds < 0 || *d.LastCommitAgeSeconds > 90 {
		t.Errorf("last commit age = %v", d.LastCommitAgeSeconds)
	}
	if done.OtherWAL == nil || *done.OtherWAL != (WALStates{Ready: FileCount{1, 300}, Uploaded: FileCount{1, 20}}) {
		t.Errorf("stray WAL files = %+v, want 1 ready (300 B) and 1 uploaded (20 B)", done.OtherWAL)
	}

	// The text view of the same.
	text := string(l.status())
	t.Logf("ingestor status, once the stream was committed:\n%s", text)
	for _, want := range []string{
		"DATASET clicks   topic clicks -> table web.clicks",
		fmt.Sprintf("dropped    %d: convert=%v missing_required=%v not_json=%v", total/badEvery,
			wantDropped["convert"], wantDropped["missing_required"], wantDropped["not_json"]),
		"wal        active 0 files (0 B)   ready 0 files (0 B)   uploaded 0 files (0 B)",
		"consumption running",
		"upload     0 files pending",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text view lacks %q:\n%s", want, text)
		}
	}
	for _, name := range []string{"supervisor", "consumer", "uploader", "committer"} {
		if !strings.Contains(text, "\n"+name+" ") || strings.Contains(text, name+" is down") {
			t.Errorf("text view does not show %s up:\n%s", name, text)
		}
	}

	// No endpoint of any process shows the planted secret either.
	for _, port := range l.ports {
		for _, path := range []string{"/metrics", Path} {
			body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
			if strings.Contains(body, planted) {
				t.Errorf("%s of port %d shows the planted secret", path, port)
			}
		}
	}

	// A role that dies is shown down or restarted, never as an error.
	victim := proc(done, "committer").PID
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.waitReport("committer restarted", 60*time.Second, func(r *Report) bool {
		p := proc(r, "committer")
		return p.Restarts != nil && *p.Restarts == 1 && p.State == StateUp && p.PID != 0 && p.PID != victim
	})

	l.checkWatch()

	// The ingestor drains and exits 0: the roles' gRPC channel carries
	// the drain.
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatalf("ingestor exit after SIGTERM: %v", err)
		}
		l.done <- nil
	case <-time.After(60 * time.Second):
		t.Fatal("ingestor still running 60s after SIGTERM")
	}
	down := NewCollector(mustLoad(t, l.cfgPath), Options{Interval: 10 * time.Millisecond})
	r, err := down.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Processes {
		if p.State != StateDown {
			t.Errorf("%s is %s after the ingestor stopped", p.Name, p.State)
		}
	}
}

// checkWatch runs `ingestor status --watch` and stops it with Ctrl-C.
func (l *live) checkWatch() {
	l.t.Helper()
	cmd := exec.Command(l.bin, "status", "--config", l.cfgPath, "--watch", "--every", "500ms")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		l.t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		l.t.Fatalf("status --watch after Ctrl-C: %v\n%s", err, stdout.String())
	}
	frames := strings.Count(stdout.String(), clearScreen)
	if frames < 2 {
		l.t.Errorf("status --watch drew %d frames in 3s at 500ms:\n%s", frames, stdout.String())
	}
	if strings.Contains(stdout.String(), planted) {
		l.t.Error("status --watch printed the planted secret")
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
