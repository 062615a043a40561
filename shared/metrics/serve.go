package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// shutdownTimeout bounds how long in-flight scrapes may finish once the
// endpoint's context has ended.
const shutdownTimeout = 5 * time.Second

// NewRegistry returns a registry for one process of the given role with the
// Go runtime and process collectors, and an ingestor_process_role_info
// gauge that tells which role a scraped endpoint belongs to.
func NewRegistry(role string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ingestor_process_role_info",
		Help:        "Role of the ingestor process that serves this endpoint; always 1.",
		ConstLabels: prometheus.Labels{"role": role},
	})
	info.Set(1)
	reg.MustRegister(info)
	return reg
}

// Route is a further path an endpoint serves beside /metrics and /healthz,
// such as a role's /status.
type Route struct {
	// Pattern is an http.ServeMux pattern, e.g. "GET /status".
	Pattern string
	// Handler answers it.
	Handler http.Handler
}

// PprofRoutes are Go's profiles, as Prometheus serves them: where a role's
// CPU and memory go, on a running process (go tool pprof
// http://ADDR/debug/pprof/profile). A process adds them to Serve's routes
// only when metrics.pprof is true: they show its command line and memory.
func PprofRoutes() []Route {
	return []Route{
		{Pattern: "/debug/pprof/", Handler: http.HandlerFunc(pprof.Index)},
		{Pattern: "/debug/pprof/cmdline", Handler: http.HandlerFunc(pprof.Cmdline)},
		{Pattern: "/debug/pprof/profile", Handler: http.HandlerFunc(pprof.Profile)},
		{Pattern: "/debug/pprof/symbol", Handler: http.HandlerFunc(pprof.Symbol)},
		{Pattern: "/debug/pprof/trace", Handler: http.HandlerFunc(pprof.Trace)},
	}
}

// HealthRoute answers /healthz with check's verdict instead of a plain
// "ok": 503 and the error's text while check fails, so that a liveness
// probe restarts a process that is up but can no longer do its work. A
// role adds it to Serve's routes; it takes the place of the default
// answer for GET (and HEAD) requests.
func HealthRoute(check func() error) Route {
	return Route{Pattern: "GET /healthz", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, err.Error()+"\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})}
}

// Serve listens on addr (":0" picks a free port) and serves reg on /metrics,
// a liveness answer on /healthz and the given routes until ctx ends. It returns once the
// listener is open, with the address actually bound, which it also logs as
// "metrics listening".
//
// Serve's goroutines end when ctx does; the caller cancels ctx only after
// the process has finished draining, so the endpoint stays up while it
// drains.
func Serve(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger, routes ...Route) (net.Addr, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("metrics listening", "address", ln.Addr().String())

	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "address", ln.Addr().String(), "error", err)
		}
	}()
	context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return ln.Addr(), nil
}
