package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/testutil"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func TestServe(t *testing.T) {
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	reg := NewRegistry("uploader")
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ingestor_uploader_files_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", reg, log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(addr.String(), ":0") {
		t.Fatalf("Serve returned %s, want the bound port", addr)
	}

	// The chosen address is logged at start.
	var line struct {
		Msg     string `json:"msg"`
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil {
		t.Fatalf("decode log %q: %v", logs.String(), err)
	}
	if line.Msg != "metrics listening" || line.Address != addr.String() {
		t.Errorf("log = %+v, want metrics listening at %s", line, addr)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	base := "http://" + addr.String()
	code, body := get(t, client, base+"/healthz")
	if code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	// Go's profiles are off unless metrics.pprof adds their routes.
	if code, _ := get(t, client, base+"/debug/pprof/heap?debug=1"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/heap = %d without PprofRoutes, want 404", code)
	}
	code, body = get(t, client, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d, want 200", code)
	}
	for _, want := range []string{
		"ingestor_uploader_files_total 3",
		`ingestor_process_role_info{role="uploader"} 1`,
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// The endpoint stops when its context ends, and only then.
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("endpoint still answers 5s after its context ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServePprofRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", NewRegistry("consumer"), nil, PprofRoutes()...)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	// The profiles are there for an operator's go tool pprof.
	if code, body := get(t, client, "http://"+addr.String()+"/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("/debug/pprof/heap = %d %.80q, want 200 and a heap profile", code, body)
	}
}

func TestServeAddressInUse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	addr, err := Serve(ctx, "127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(ctx, addr.String(), reg, nil); err == nil {
		t.Fatalf("second Serve on %s succeeded, want address in use", addr)
	}
}

func TestHealthRoute(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var failing error
	check := func() error {
		mu.Lock()
		defer mu.Unlock()
		return failing
	}
	addr, err := Serve(ctx, "127.0.0.1:0", NewRegistry("consumer"), nil, HealthRoute(check))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	url := "http://" + addr.String() + "/healthz"
	if code, body := get(t, client, url); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q while the check passes, want 200 ok", code, body)
	}
	mu.Lock()
	failing = errors.New("dataset clicks: consumer stalled (no_progress)")
	mu.Unlock()
	if code, body := get(t, client, url); code != http.StatusServiceUnavailable || !strings.Contains(body, "no_progress") {
		t.Errorf("/healthz = %d %q while the check fails, want 503 with the reason", code, body)
	}
}
