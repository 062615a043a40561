package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/internal/status"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/rpc"
	"github.com/icewal/ingestor/supervisor"
)

// Exit codes.
const (
	exitError = 1 // the process ran and failed
	exitUsage = 2 // bad command line or configuration: nothing ran
)

// process is what every subcommand that runs the record path sets up: its
// configuration, its JSON logger and its own metrics registry.
type process struct {
	cfg        *config.Config
	configPath string
	log        *slog.Logger
	reg        *prometheus.Registry
}

// setup parses `--config FILE` and loads the configuration. name is the
// process's role, logged under the key "role". A failure is printed for a
// person to read and returns exitUsage.
func setup(subcommand, name string, args []string) (*process, int) {
	fs := flag.NewFlagSet("ingestor "+subcommand, flag.ContinueOnError)
	path := fs.String("config", "", "path of the YAML configuration `file`")
	if err := fs.Parse(args); err != nil {
		return nil, flagsExit(err) // the flag package printed why
	}
	if *path == "" || fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "usage: ingestor %s --config FILE\n", subcommand)
		return nil, exitUsage
	}
	abs, err := filepath.Abs(*path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingestor %s: config path %s: %v\n", subcommand, *path, err)
		return nil, exitUsage
	}
	cfg, err := config.Load(abs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingestor %s: invalid configuration:\n%v\n", subcommand, err)
		return nil, exitUsage
	}
	return &process{
		cfg:        cfg,
		configPath: abs,
		log:        slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("role", name),
		reg:        metrics.NewRegistry(name),
	}, 0
}

// serveMetrics starts the process's /metrics endpoint at its role's
// address. The endpoint lives until the returned stop is called, which the
// caller does only after its Run returned: it stays up during the drain.
func (p *process) serveMetrics(name string, routes ...metrics.Route) (net.Addr, context.CancelFunc, error) {
	addr, err := metrics.RoleAddress(p.cfg, name)
	if err != nil {
		return nil, nil, err
	}
	if p.cfg.Metrics.Pprof {
		routes = append(routes, metrics.PprofRoutes()...)
	}
	ctx, stop := context.WithCancel(context.Background())
	bound, err := metrics.Serve(ctx, addr, p.reg, p.log, routes...)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return bound, stop, nil
}

// serveControl serves the control socket of the WAL directory (see
// shared/pause) with c, for `ingestor pause` and `ingestor resume`. It
// lives until the returned stop is called, which the caller does only
// after its Run returned. A socket that cannot be made (a WAL path too
// long for one, a file system without sockets) is logged as an error and
// the process runs without it: the record path does not depend on it,
// and a pause recorded earlier still holds, since the consumer reads the
// record at start.
func (p *process) serveControl(c *pause.Controller) func() {
	l, err := p.listenControl()
	if err != nil {
		p.log.Error("no control socket: ingestor pause and resume cannot reach this process", "error", err)
		return func() {}
	}
	return p.serveListener(l, c)
}

func (p *process) listenControl() (net.Listener, error) {
	dir := p.cfg.Ingestion.WAL.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create wal dir: %w", err)
	}
	return pause.Listen(dir)
}

func (p *process) serveListener(l net.Listener, c *pause.Controller) func() {
	dir := p.cfg.Ingestion.WAL.Dir
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := pause.Serve(ctx, l, c, p.log); err != nil {
			p.log.Error("control socket stopped", "error", err)
		}
	}()
	p.log.Info("control socket ready", "path", pause.SocketPath(dir))
	return func() { cancel(); <-done }
}

// stopContext is cancelled by the first SIGTERM or SIGINT, which starts the
// orderly drain; a second one exits at once, leaving the rest to recovery
// at the next start.
func (p *process) stopContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		p.log.Info("draining", "signal", sig.String())
		cancel()
		sig = <-signals
		p.log.Warn("second signal: exiting at once", "signal", sig.String())
		os.Exit(exitError)
	}()
	return ctx
}

// runSupervisor is `ingestor run`.
func runSupervisor(args []string) int {
	p, code := setup("run", metrics.Supervisor, args)
	if p == nil {
		return code
	}
	sup, err := supervisor.New(p.cfg, p.configPath, supervisor.Options{Logger: p.log, Registerer: p.reg})
	if err != nil {
		p.log.Error("start supervisor", "error", err)
		return exitError
	}
	_, stopMetrics, err := p.serveMetrics(metrics.Supervisor,
		metrics.Route{Pattern: "GET " + status.Path, Handler: status.Handler(metrics.Supervisor, func() rolestatus.Details {
			b := sup.Status()
			return rolestatus.Details{Supervisor: &b}
		})})
	if err != nil {
		p.log.Error("serve metrics", "error", err)
		return exitError
	}
	defer stopMetrics()
	defer p.serveControl(sup.Pauses())()
	if err := sup.Run(p.stopContext()); err != nil {
		p.log.Error("supervisor stopped", "error", err)
		return exitError
	}
	p.log.Info("supervisor stopped")
	return 0
}

// roleCommand is `ingestor <role>`: the role as the supervisor's child
// (rpc.IsChild) or alone, for instance as a sidecar container.
func roleCommand(name string) func(args []string) int {
	return func(args []string) int {
		p, code := setup(name, name, args)
		if p == nil {
			return code
		}
		r, err := newRole(name, p.cfg, role.Options{Logger: p.log, Registerer: p.reg})
		if err != nil {
			p.log.Error("start role", "error", err)
			return exitError
		}
		roleStatus := statusOf(r)
		routes := []metrics.Route{{Pattern: "GET " + status.Path, Handler: status.Handler(name, roleStatus)}}
		// A role that can tell it no longer works (the consumer's
		// watchdog) answers /healthz itself.
		if h, ok := r.(interface{ Healthy() error }); ok {
			routes = append(routes, metrics.HealthRoute(h.Healthy))
		}
		addr, stopMetrics, err := p.serveMetrics(name, routes...)
		if err != nil {
			p.log.Error("serve metrics", "error", err)
			return exitError
		}
		defer stopMetrics()
		if rpc.IsChild() {
			opts := []rpc.ChildOption{rpc.WithLogger(p.log), rpc.WithMetricsAddress(addr.String())}
			if pauser, ok := r.(rpc.Pauser); ok {
				opts = append(opts, rpc.WithPauser(pauser))
			}
			rpc.ServeChild(name, r.Run, roleStatus, opts...) // exits the process
		}
		// Alone (the sidecar layout) the consumer serves the control
		// socket itself; as a child, the supervisor does.
		if applier, ok := r.(pause.Applier); ok {
			ctrl, err := pause.NewController(p.cfg.Ingestion.WAL.Dir, datasetNames(p.cfg),
				func() pause.Applier { return applier }, p.log)
			if err != nil {
				p.log.Error("start role", "error", err)
				return exitError
			}
			defer p.serveControl(ctrl)()
		}
		err = r.Run(p.stopContext())
		if err != nil && !errors.Is(err, context.Canceled) {
			p.log.Error("role stopped", "error", err)
			return exitError
		}
		p.log.Info("role stopped")
		return 0
	}
}

// datasetNames returns the configured datasets' names.
func datasetNames(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Datasets))
	for _, d := range cfg.Datasets {
		names = append(names, d.Name)
	}
	return names
}
