package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/walfile"
)

// planted is a secret of the test configuration that must never be shown.
const planted = "PLANTED-s3cr3t-7f1c9a"

// fakeProcess serves a /metrics text and a /status JSON; the consumer's
// record counter grows by step at each scrape.
type fakeProcess struct {
	srv     *httptest.Server
	metrics func(scrape int64) string
	status  any
	scrapes atomic.Int64
}

func startFake(t *testing.T, metrics func(int64) string, status any) *fakeProcess {
	t.Helper()
	f := &fakeProcess{metrics: metrics, status: status}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		n := f.scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, f.metrics(n))
	})
	if status != nil {
		mux.HandleFunc("GET "+Path, func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(f.status)
		})
	}
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProcess) addr() string { return f.srv.Listener.Addr().String() }

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func testConfig(t *testing.T, walDir, sup, cons, upl, com string) *config.Config {
	t.Helper()
	doc := fmt.Sprintf(`ingestion:
  wal: {dir: %q, diskHighWatermarkPct: 80}
kafka: {brokers: ["127.0.0.1:9092"]}
catalog:
  name: test
  type: sql
  uri: "postgres://ingest:%s@db:5432/catalog"
  credential: "client:%s"
metrics:
  address: %q
  roles: {consumer: %q, uploader: %q, committer: %q}
datasets:
  - {name: clicks, topic: clicks, table: web.clicks, customMapping: {id: id}}
  - {name: orders, topic: orders, table: shop.orders, customMapping: {id: id}}
`, walDir, planted, planted, sup, cons, upl, com)
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeWAL makes a WAL file of the given state and size.
func writeWAL(t *testing.T, dir string, n walfile.Name, size int) {
	t.Helper()
	n.UUID = uuid.New()
	if err := os.WriteFile(filepath.Join(dir, n.String()), bytes.Repeat([]byte("x"), size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectFromEndpoints(t *testing.T) {
	walDir := t.TempDir()
	writeWAL(t, walDir, walfile.Name{State: walfile.Active, Topic: "clicks", Partition: 0}, 100)
	writeWAL(t, walDir, walfile.Name{State: walfile.Active, Topic: "clicks", Partition: 1}, 50)
	writeWAL(t, walDir, walfile.Name{State: walfile.Ready, Topic: "clicks", Partition: 0, Start: 0, End: 9}, 1000)
	writeWAL(t, walDir, walfile.Name{State: walfile.Uploaded, Topic: "clicks", Partition: 0, Start: 10, End: 19}, 7)
	writeWAL(t, walDir, walfile.Name{State: walfile.Ready, Topic: "stray", Partition: 3, Start: 5, End: 6}, 30)
	// Not WAL files: left out.
	for _, name := range []string{".consumer.lock", "tmp_x_ready_clicks_0_1-2.parquet", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(walDir, name), []byte("zz"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sup := startFake(t, func(int64) string {
		return `# TYPE ingestor_supervisor_role_up gauge
ingestor_supervisor_role_up{role="consumer"} 1
ingestor_supervisor_role_up{role="uploader"} 0
ingestor_supervisor_role_up{role="committer"} 1
# TYPE ingestor_supervisor_role_restarts_total counter
ingestor_supervisor_role_restarts_total{role="consumer"} 0
ingestor_supervisor_role_restarts_total{role="uploader"} 4
ingestor_supervisor_role_restarts_total{role="committer"} 1
`
	}, map[string]any{"role": "supervisor", "pid": 4100, "details": map[string]any{
		"paused": map[string]any{"orders": map[string]any{"by": "alice (uid 1000)", "reason": "catalog migration", "since": "2026-12-02T05:00:00Z"}},
	}})
	cons := startFake(t, func(n int64) string {
		// 500 more records at each scrape.
		return fmt.Sprintf(`# TYPE ingestor_consumer_records_total counter
ingestor_consumer_records_total{dataset="clicks"} %d
ingestor_consumer_records_total{dataset="orders"} 7
# TYPE ingestor_consumer_records_dropped_total counter
ingestor_consumer_records_dropped_total{dataset="clicks",reason="not_json"} 3
ingestor_consumer_records_dropped_total{dataset="clicks",reason="convert"} 2
ingestor_consumer_records_dropped_total{dataset="clicks",reason="%s"} 1
# TYPE ingestor_consumer_lag_records gauge
ingestor_consumer_lag_records{dataset="clicks",partition="10"} 5
ingestor_consumer_lag_records{dataset="clicks",partition="2"} 40
ingestor_consumer_lag_records{dataset="orders",partition="0"} 0
# TYPE ingestor_consumer_segments_open gauge
ingestor_consumer_segments_open{dataset="clicks"} 2
# TYPE ingestor_consumer_paused gauge
ingestor_consumer_paused{dataset="clicks",reason="disk"} 1
ingestor_consumer_paused{dataset="clicks",reason="operator"} 0
ingestor_consumer_paused{dataset="orders",reason="disk"} 1
ingestor_consumer_paused{dataset="orders",reason="operator"} 1
# TYPE ingestor_consumer_wal_volume_used_ratio gauge
ingestor_consumer_wal_volume_used_ratio 0.83
`, 1000+500*n, planted)
	}, map[string]any{"role": "consumer", "pid": 4242, "details": map[string]any{
		"paused": true, "paused_reasons": []string{"wal_volume_above_high_watermark"},
	}})
	com := startFake(t, func(int64) string {
		return `# TYPE ingestor_committer_last_commit_timestamp_seconds gauge
ingestor_committer_last_commit_timestamp_seconds{dataset="clicks"} 1.7e9
`
	}, map[string]any{"role": "committer", "pid": 4343, "details": map[string]any{
		"datasets": map[string]any{"clicks": map[string]any{"last_error": map[string]any{
			"time": "2023-11-14T22:13:00Z", "reason": "unknown", "step": "commit outcome unknown",
			"error": "commit to postgres://ingest:" + planted + "@db:5432/catalog: connection reset\nby peer",
		}}},
	}})

	cfg := testConfig(t, walDir, sup.addr(), cons.addr(), closedAddr(t), com.addr())
	c := NewCollector(cfg, Options{ConfigPath: "/etc/ingestor.yaml", Interval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}

	state := map[string]Process{}
	for _, p := range r.Processes {
		state[p.Name] = p
	}
	if p := state["supervisor"]; p.State != StateUp || p.SupervisorUp != nil {
		t.Errorf("supervisor = %+v", p)
	}
	if p := state["consumer"]; p.State != StateUp || p.PID != 4242 || p.SupervisorUp == nil || !*p.SupervisorUp || *p.Restarts != 0 {
		t.Errorf("consumer = %+v", p)
	}
	if p := state["uploader"]; p.State != StateDown || p.Error != "connection refused" || *p.SupervisorUp || *p.Restarts != 4 {
		t.Errorf("uploader = %+v, want down (connection refused), supervisor says down, 4 restarts", p)
	}
	if p := state["committer"]; p.State != StateUp || p.PID != 4343 || *p.Restarts != 1 {
		t.Errorf("committer = %+v", p)
	}

	if v := r.Volume; v.ConsumerUsedPct == nil || *v.ConsumerUsedPct != 83 || v.Paused == nil || !*v.Paused ||
		len(v.PausedReasons) != 1 || v.HighWatermarkPct != 80 || v.ResumeBelowPct != 75 || v.UsedPct == nil {
		t.Errorf("volume = %+v", v)
	}

	if len(r.Datasets) != 2 || r.Datasets[0].Name != "clicks" || r.Datasets[1].Name != "orders" {
		t.Fatalf("datasets = %+v", r.Datasets)
	}
	clicks, orders := r.Datasets[0], r.Datasets[1]
	// Two scrapes 500 records apart, about 200ms apart: about 2500/s.
	if e := clicks.EventsPerSecond; e == nil || *e < 500 || *e > 2600 {
		t.Errorf("clicks events/s = %v, want about 2500", e)
	}
	if e := orders.EventsPerSecond; e == nil || *e != 0 {
		t.Errorf("orders events/s = %v, want 0", e)
	}
	if fmt.Sprint(clicks.Lag) != "[{2 40} {10 5}]" || *clicks.LagTotal != 45 {
		t.Errorf("clicks lag = %v total %v, want partitions in numeric order", clicks.Lag, *clicks.LagTotal)
	}
	if clicks.Dropped["not_json"] != 3 || clicks.Dropped["convert"] != 2 || *clicks.DroppedTotal != 6 {
		t.Errorf("clicks dropped = %v total %v", clicks.Dropped, *clicks.DroppedTotal)
	}
	if *clicks.SegmentsOpen != 2 || *orders.SegmentsOpen != 0 || !*clicks.Paused {
		t.Errorf("clicks segments %v paused %v, orders segments %v", *clicks.SegmentsOpen, *clicks.Paused, *orders.SegmentsOpen)
	}
	if fmt.Sprint(clicks.PausedReasons) != "[disk]" || fmt.Sprint(orders.PausedReasons) != "[disk operator]" {
		t.Errorf("paused reasons = %v / %v, want [disk] / [disk operator]", clicks.PausedReasons, orders.PausedReasons)
	}
	if p := orders.OperatorPause; clicks.OperatorPause != nil || p == nil || p.By != "alice (uid 1000)" || p.Reason != "catalog migration" ||
		!p.Since.Equal(time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("operator pause = %+v / %+v, want orders' as the supervisor tells it", clicks.OperatorPause, orders.OperatorPause)
	}
	wantWAL := WALStates{Active: FileCount{2, 150}, Ready: FileCount{1, 1000}, Uploaded: FileCount{1, 7}}
	if clicks.WAL != wantWAL || orders.WAL != (WALStates{}) {
		t.Errorf("wal = %+v / %+v, want %+v / none", clicks.WAL, orders.WAL, wantWAL)
	}
	if r.OtherWAL == nil || *r.OtherWAL != (WALStates{Ready: FileCount{1, 30}}) {
		t.Errorf("other wal = %+v", r.OtherWAL)
	}
	if clicks.PendingUpload != nil {
		t.Errorf("pending upload = %v with the uploader down, want unknown", *clicks.PendingUpload)
	}
	if clicks.LastCommit == nil || !clicks.LastCommit.Equal(time.Unix(1.7e9, 0)) || orders.LastCommit != nil {
		t.Errorf("last commit = %v / %v", clicks.LastCommit, orders.LastCommit)
	}
	e := clicks.LastCommitError
	if e == nil || e.Reason != "unknown" || e.Step != "commit outcome unknown" || !e.Time.Equal(time.Date(2023, 11, 14, 22, 13, 0, 0, time.UTC)) {
		t.Fatalf("last commit error = %+v", e)
	}
	if strings.Contains(e.Error, planted) || !strings.Contains(e.Error, "connection reset") {
		t.Errorf("last commit error text = %q: want it, without the secret", e.Error)
	}

	for _, format := range []string{FormatText, FormatJSON} {
		out, err := Format(r, format, c.Redactor())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte(planted)) {
			t.Errorf("%s output holds the planted secret:\n%s", format, out)
		}
		if !bytes.Contains(out, []byte("REDACTED")) {
			t.Errorf("%s output lost the redacted label and error:\n%s", format, out)
		}
	}
}

func TestAllDown(t *testing.T) {
	walDir := filepath.Join(t.TempDir(), "missing")
	cfg := testConfig(t, walDir, closedAddr(t), closedAddr(t), closedAddr(t), closedAddr(t))
	c := NewCollector(cfg, Options{Interval: time.Millisecond})
	r, err := c.Collect(context.Background())
	if err != nil {
		t.Fatalf("collect with every process down = %v; want a report", err)
	}
	for _, p := range r.Processes {
		if p.State != StateDown || p.SupervisorUp != nil || p.Restarts != nil {
			t.Errorf("process %+v, want down and nothing known", p)
		}
	}
	d := r.Datasets[0]
	if d.Paused != nil || d.EventsPerSecond != nil || d.LagTotal != nil || d.SegmentsOpen != nil || d.LastCommit != nil {
		t.Errorf("dataset %+v, want unknowns", d)
	}
	if r.WALError == "" || r.Volume.UsedPct != nil {
		t.Errorf("wal error %q, volume %v: want the missing directory reported", r.WALError, r.Volume.UsedPct)
	}
	out, err := Format(r, FormatText, c.Redactor())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"consumption ? (consumer down)", "commit     ? (committer down)", "consumer is down: connection refused"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestOperatorPauseFromTheRecord: with every process down, the pause an
// operator recorded is still shown, read from the WAL directory.
func TestOperatorPauseFromTheRecord(t *testing.T) {
	walDir := t.TempDir()
	since := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	if err := pause.Write(walDir, pause.Record{Datasets: map[string]pause.Entry{"clicks": {By: "bob (uid 1001)", Since: since}}}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, walDir, closedAddr(t), closedAddr(t), closedAddr(t), closedAddr(t))
	c := NewCollector(cfg, Options{Interval: time.Millisecond})
	r, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Datasets[0].OperatorPause; p == nil || p.By != "bob (uid 1001)" || !p.Since.Equal(since) || p.AgeSeconds < 590 {
		t.Fatalf("clicks operator pause = %+v, want bob's from the record", p)
	}
	if r.Datasets[1].OperatorPause != nil {
		t.Fatalf("orders operator pause = %+v, want none", r.Datasets[1].OperatorPause)
	}
	out, err := Format(r, FormatText, c.Redactor())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "pause      by bob (uid 1001) since ") || !strings.Contains(string(out), "(10m00s ago): no reason given") {
		t.Errorf("text lacks the pause line:\n%s", out)
	}
}

func TestPortZeroIsDown(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "127.0.0.1:0", "", "", "")
	cfg.Metrics.Roles = config.RoleAddresses{}
	r, err := NewCollector(cfg, Options{Interval: time.Millisecond}).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Processes {
		if p.State != StateDown || !strings.Contains(p.Error, "port 0") {
			t.Errorf("process %+v, want down for its unknown port", p)
		}
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler("committer", func() rolestatus.Details {
		return rolestatus.Details{Committer: &rolestatus.Committer{IntervalSeconds: 1}}
	}))
	defer srv.Close()
	st, err := fetchStatus(context.Background(), srv.Client(), srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if st.Role != "committer" || st.PID != os.Getpid() || st.Details.Committer == nil || st.Details.Committer.IntervalSeconds != 1.0 {
		t.Errorf("status = %+v", st)
	}

	panicky := httptest.NewServer(Handler("consumer", func() rolestatus.Details { panic("boom") }))
	defer panicky.Close()
	if _, err := fetchStatus(context.Background(), panicky.Client(), panicky.Listener.Addr().String()); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("status of a panicking role = %v, want a 500", err)
	}
}

func TestWatch(t *testing.T) {
	cons := startFake(t, func(n int64) string {
		return fmt.Sprintf("ingestor_consumer_records_total{dataset=\"clicks\"} %d\n", 100*n)
	}, nil)
	cfg := testConfig(t, t.TempDir(), closedAddr(t), cons.addr(), closedAddr(t), closedAddr(t))
	c := NewCollector(cfg, Options{Interval: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var buf bytes.Buffer
	if err := Watch(ctx, &buf, c, FormatText, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	frames := strings.Count(buf.String(), clearScreen)
	if frames < 2 || frames > 5 {
		t.Errorf("%d redraws in 700ms at a 200ms interval:\n%s", frames, buf.String())
	}
	if !strings.HasPrefix(buf.String(), clearScreen+"ingestor status") {
		t.Errorf("a redraw does not start with a cleared screen: %q", buf.String()[:min(40, buf.Len())])
	}

	// JSON: one document after another.
	c = NewCollector(cfg, Options{Interval: 50 * time.Millisecond})
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	buf.Reset()
	if err := Watch(ctx, &buf, c, FormatJSON, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	n := 0
	for dec.More() {
		var r Report
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if len(r.Datasets) != 2 {
			t.Fatalf("report %d has %d datasets", n, len(r.Datasets))
		}
		n++
	}
	if n < 2 {
		t.Errorf("%d JSON reports, want at least 2", n)
	}
	if strings.Contains(buf.String(), clearScreen) {
		t.Error("JSON output holds terminal control codes")
	}
}

func mustLoad(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
