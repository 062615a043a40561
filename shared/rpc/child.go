package rpc

import (
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/rolestatus"
)

const (
	// parentCheckInterval is how often a child checks that its parent lives.
	parentCheckInterval = time.Second
	// replyWait bounds how long a child whose run returned waits for the
	// calls it is serving (the Drain under way, or a Pause that made the
	// role fail) to be answered before the process exits. The supervisor
	// does not depend on those answers: the exit code is what tells it how
	// the drain went.
	replyWait = time.Second
	// replyFlush is how long an answer is given to leave the transport
	// once its call ended.
	replyFlush = 50 * time.Millisecond
)

// ChildOption configures ServeChild.
type ChildOption func(*childOptions)

type childOptions struct {
	logger         *slog.Logger
	metricsAddress string
	pauser         Pauser
}

// WithLogger sets the logger ServeChild reports on; it must write to
// stderr (or elsewhere than stdout, which belongs to the handshake). The
// default writes JSON to stderr.
func WithLogger(l *slog.Logger) ChildOption {
	return func(o *childOptions) { o.logger = l }
}

// WithMetricsAddress sets the metrics address reported by Status.
func WithMetricsAddress(addr string) ChildOption {
	return func(o *childOptions) { o.metricsAddress = addr }
}

// WithPauser makes Pause and Resume reach the role; without it they answer
// nil.
func WithPauser(p Pauser) ChildOption {
	return func(o *childOptions) { o.pauser = p }
}

// ServeChild is what a child process started by the supervisor calls (see
// IsChild) instead of running its role directly. It runs run in a goroutine
// with a context that Drain cancels, serves the Role over go-plugin, ignores
// SIGINT and SIGTERM, and exits the process when run returns: with code 0
// if run returned nil, 1 otherwise. It also exits, at once and with code 1,
// when its parent process dies, or when the supervisor's go-plugin client
// is killed (which asks the child's gRPC server to shut down) while run is
// working and no drain was asked for. Killed during a drain, the child
// still finishes the drain before it exits. status, which may be nil,
// fills the Status's Details with the role's body.
//
// ServeChild never returns. Loggers must be built before it is called:
// go-plugin replaces os.Stdout and os.Stderr with pipes of its own, while a
// handler built earlier keeps the real stderr. Whatever runs before it
// (building the role) must not block: the supervisor waits for the
// handshake for at most StartTimeout.
func ServeChild(roleName string, run func(ctx context.Context) error, status func() rolestatus.Details, opts ...ChildOption) {
	os.Exit(serveChild(roleName, run, status, opts...))
}

func serveChild(roleName string, run func(ctx context.Context) error, status func() rolestatus.Details, opts ...ChildOption) int {
	// Taken before plugin.Serve swaps os.Stderr for a pipe.
	stderr := os.Stderr
	o := childOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewJSONHandler(stderr, nil)).With("role", roleName)
	}
	log := o.logger
	// go-plugin reports through the standard logger with "[LEVEL]"
	// prefixes; this process logs JSON only.
	stdlog.SetFlags(0)
	stdlog.SetOutput(&stdLogWriter{log: log})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &child{
		log:            log,
		name:           roleName,
		pid:            os.Getpid(),
		metricsAddress: o.metricsAddress,
		status:         status,
		pauser:         o.pauser,
		cancel:         cancel,
		runDone:        make(chan struct{}),
	}
	go func() {
		defer close(c.runDone)
		c.runErr = run(ctx)
	}()

	// The supervisor orders the stop. A Ctrl-C in a terminal reaches the
	// whole process group; acting on it here would break the drain order.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range signals {
			log.Info("ignoring signal: the supervisor orders the stop", "signal", sig.String())
		}
	}()

	parentGone := watchParent(parentCheckInterval)

	calls := &inflight{}
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: Handshake,
			Plugins:         plugin.PluginSet{PluginName: &RolePlugin{Impl: c}},
			GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
				return grpc.NewServer(append(opts, grpc.StatsHandler(calls))...)
			},
			Logger: pluginLogger(stderr, roleName),
		})
	}()

	select {
	case <-c.runDone:
	case <-parentGone:
		log.Warn("parent process exited: stopping at once")
		return 1
	case <-serveDone:
		// go-plugin's gRPC server stops when the supervisor's client is
		// killed. A drain under way is finished: its files are what the
		// other roles' final passes wait for.
		if !c.drainCalled.Load() {
			log.Warn("supervisor shut the connection down while the role runs: stopping at once")
			return 1
		}
		log.Warn("supervisor shut the connection down during the drain: finishing the drain")
		select {
		case <-c.runDone:
		case <-parentGone:
			log.Warn("parent process exited: stopping at once")
			return 1
		}
	}

	calls.settle(replyWait, replyFlush)
	if c.runErr != nil {
		log.Error("role stopped with an error", "error", c.runErr)
		return 1
	}
	log.Info("role stopped")
	return 0
}

// pluginLogger is the logger for go-plugin's own messages in a child.
func pluginLogger(w io.Writer, roleName string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "go-plugin." + roleName,
		Output:     w,
		Level:      hclog.Warn,
		JSONFormat: true,
	})
}

// watchParent returns a channel closed when the parent process changes,
// which on Linux means it died and this process was re-parented. It is the
// fallback to the Pdeathsig the supervisor sets, which fires only when the
// parent's thread that started the child exits.
func watchParent(every time.Duration) <-chan struct{} {
	gone := make(chan struct{})
	ppid := os.Getppid()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != ppid {
				close(gone)
				return
			}
		}
	}()
	return gone
}

// child is the Role a child process serves.
type child struct {
	log            *slog.Logger
	name           string
	pid            int
	metricsAddress string
	status         func() rolestatus.Details
	pauser         Pauser
	cancel         context.CancelFunc

	runDone     chan struct{}
	runErr      error // set before runDone is closed
	drainCalled atomic.Bool
}

var _ Role = (*child)(nil)

// Drain implements Role.
func (c *child) Drain(ctx context.Context) error {
	if !c.drainCalled.Swap(true) {
		budget := "none"
		if d, ok := ctx.Deadline(); ok {
			budget = time.Until(d).Round(time.Millisecond).String()
		}
		c.log.Info("drain requested", "budget", budget)
	}
	c.cancel()
	select {
	case <-c.runDone:
		if c.runErr != nil {
			return fmt.Errorf("%s run: %w", c.name, c.runErr)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain %s: run has not returned: %w", c.name, ctx.Err())
	}
}

// Status implements Role.
func (c *child) Status(context.Context) (rolestatus.Status, error) {
	st := rolestatus.Status{Role: c.name, PID: c.pid, MetricsAddress: c.metricsAddress, State: c.state()}
	if c.status != nil {
		st.Details = c.status()
	}
	return st, nil
}

func (c *child) state() string {
	select {
	case <-c.runDone:
		return rolestatus.StateStopped
	default:
	}
	if c.drainCalled.Load() {
		return rolestatus.StateDraining
	}
	return rolestatus.StateRunning
}

// Pause implements Role.
func (c *child) Pause(ctx context.Context, dataset string, e pause.Entry) error {
	if c.pauser == nil {
		return nil
	}
	return c.pauser.Pause(ctx, dataset, e)
}

// Resume implements Role.
func (c *child) Resume(ctx context.Context, dataset string) error {
	if c.pauser == nil {
		return nil
	}
	return c.pauser.Resume(ctx, dataset)
}

// stdLogWriter turns lines of the standard logger, as go-plugin writes
// them ("[DEBUG] plugin: ..."), into slog records at the level their
// prefix names.
type stdLogWriter struct{ log *slog.Logger }

func (w *stdLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	for prefix, l := range map[string]slog.Level{
		"[TRACE]": slog.LevelDebug - 4, "[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo,
		"[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError, "[ERROR]": slog.LevelError,
	} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			level, msg = l, strings.TrimSpace(rest)
			break
		}
	}
	w.log.Log(context.Background(), level, msg)
	return len(p), nil
}
