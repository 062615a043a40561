package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// serveRole serves a process's /status through Handler with the typed
// body its Status method would fill, beside an empty /metrics.
func serveRole(t *testing.T, name string, body func() rolestatus.Details) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(http.ResponseWriter, *http.Request) {})
	mux.Handle("GET "+Path, Handler(name, body))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestReportFromTypedStatus: what each role fills in its typed status
// crosses its /status endpoint in the envelope and reaches the report and
// its text view: a field renamed on the writing side only, or read under
// another name, fails here.
func TestReportFromTypedStatus(t *testing.T) {
	since := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Second)
	failed := time.Now().Add(-2 * time.Minute).UTC()
	supBody := &rolestatus.Supervisor{
		PID: 4100, Started: since, UptimeSeconds: 7322,
		Children: map[string]rolestatus.Child{
			"consumer":  {Running: true, PID: 4242, Started: since, UptimeSeconds: ptr(3725.0)},
			"committer": {Running: true, PID: 4343, Started: since, UptimeSeconds: ptr(61.0)},
		},
		Paused: map[string]pause.Entry{"orders": {By: "alice (uid 1000)", Reason: "catalog migration", Since: since}},
	}
	consBody := &rolestatus.Consumer{
		Paused: true, PausedReasons: []string{"wal_volume_above_high_watermark", "operator"},
		Datasets: map[string]rolestatus.ConsumerDataset{
			"orders": {OperatorPause: &pause.Entry{By: "bob (uid 1001)", Reason: "from the consumer", Since: since}},
		},
	}
	comBody := &rolestatus.Committer{Datasets: map[string]rolestatus.CommitterDataset{
		"clicks": {LastError: &rolestatus.CommitError{Time: failed, Reason: "conflict", Step: "commit", Error: "branch main has changed " + planted}},
	}}
	sup := serveRole(t, "supervisor", func() rolestatus.Details { return rolestatus.Details{Supervisor: supBody} })
	cons := serveRole(t, "consumer", func() rolestatus.Details { return rolestatus.Details{Consumer: consBody} })
	upl := serveRole(t, "uploader", func() rolestatus.Details {
		return rolestatus.Details{Uploader: &rolestatus.Uploader{Datasets: map[string]rolestatus.UploaderDataset{"clicks": {PendingFiles: 3}}}}
	})
	com := serveRole(t, "committer", func() rolestatus.Details { return rolestatus.Details{Committer: comBody} })
	mnt := serveRole(t, "maintainer", func() rolestatus.Details {
		return rolestatus.Details{Maintainer: &rolestatus.Maintainer{Datasets: map[string]rolestatus.MaintainerDataset{
			"clicks": {Table: "web.clicks", LastCompact: &rolestatus.StepOutcome{LastSuccess: since}},
		}}}
	})

	collect := func(supAddr string) (*Report, string) {
		t.Helper()
		cfg := testConfig(t, t.TempDir(), supAddr, cons, upl, com)
		cfg.Metrics.Roles.Maintainer = mnt
		c := NewCollector(cfg, Options{Interval: time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := c.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Format(r, FormatText, c.Redactor())
		if err != nil {
			t.Fatal(err)
		}
		return r, string(out)
	}

	r, text := collect(sup)
	// Every envelope decoded, the body of its role in it: each process
	// tells its PID.
	for _, p := range r.Processes {
		if p.State != StateUp || p.PID != os.Getpid() {
			t.Errorf("%s is %s (%s), pid %d: want up with the pid its status tells", p.Name, p.State, p.Error, p.PID)
		}
	}
	if len(r.Processes) != 5 {
		t.Errorf("%d processes, want the supervisor and four roles", len(r.Processes))
	}
	wantUptime := map[string]float64{"supervisor": 7322, "consumer": 3725, "committer": 61}
	for _, p := range r.Processes {
		want, ok := wantUptime[p.Name]
		if !ok {
			if p.UptimeSeconds != nil {
				t.Errorf("%s uptime %v, want unknown: the supervisor tells none", p.Name, *p.UptimeSeconds)
			}
			continue
		}
		if p.UptimeSeconds == nil || *p.UptimeSeconds != want {
			t.Errorf("%s uptime %v, want %v from the supervisor's status", p.Name, p.UptimeSeconds, want)
		}
	}
	if v := r.Volume; v.Paused == nil || !*v.Paused || strings.Join(v.PausedReasons, ",") != "wal_volume_above_high_watermark,operator" {
		t.Errorf("volume %+v, want paused for the consumer's reasons", v)
	}
	orders := r.Datasets[1]
	if p := orders.OperatorPause; p == nil || p.By != "alice (uid 1000)" || p.Reason != "catalog migration" || !p.Since.Equal(since) {
		t.Errorf("orders pause %+v, want the supervisor's", p)
	}
	e := r.Datasets[0].LastCommitError
	if e == nil || e.Reason != "conflict" || e.Step != "commit" || !e.Time.Equal(failed) ||
		!strings.HasPrefix(e.Error, "branch main has changed") || strings.Contains(e.Error, planted) {
		t.Fatalf("clicks commit error %+v, want the committer's, its secret masked", e)
	}
	for _, want := range []string{
		"consumption PAUSED (wal_volume_above_high_watermark, operator)",
		"2h2m2s", "1h2m5s", "1m1s",
		"pause      by alice (uid 1000) since " + since.Format("2006-01-02 15:04:05 UTC"),
		"[conflict] commit: branch main has changed REDACTED",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}

	// Without a supervisor, the consumer's status tells the pauses.
	r, text = collect(closedAddr(t))
	if p := r.Datasets[1].OperatorPause; p == nil || p.By != "bob (uid 1001)" || p.Reason != "from the consumer" {
		t.Errorf("orders pause %+v, want the consumer's", p)
	}
	if !strings.Contains(text, "pause      by bob (uid 1001)") {
		t.Errorf("text lacks the consumer's pause:\n%s", text)
	}
}
