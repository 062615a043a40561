package supervisor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rpc"
)

// Options are what a Supervisor is built with.
type Options struct {
	// Logger receives the supervisor's logs; logs about a child carry its
	// role under the key "child" (the key "role" names the process that
	// logs). Default: discard.
	Logger *slog.Logger
	// Registerer receives the supervisor's metrics. Default: a fresh registry.
	Registerer prometheus.Registerer
	// Command builds the command of a role's child process. Default:
	// the running executable with `<role> --config <configPath>`. The
	// supervisor sets the command's Pdeathsig.
	Command func(role string) *exec.Cmd
	// Stderr receives the children's stderr, line by line, and go-plugin's
	// warnings. Default: os.Stderr.
	Stderr io.Writer
}

// Supervisor runs the roles as child processes; see the package doc.
type Supervisor struct {
	cfg       *config.Config
	roles     []string
	opts      Options
	log       *slog.Logger
	pluginLog hclog.Logger
	metrics   *supervisorMetrics
	started   time.Time // when New built the supervisor, for its uptime

	mu       sync.Mutex
	children map[string]*child // the running child of each role

	// pauses keeps the operators' pauses and tells the consumer child.
	pauses *pause.Controller
}

// New returns a Supervisor of the three roles, configured by cfg, whose
// children read their configuration from configPath.
func New(cfg *config.Config, configPath string, opts Options) (*Supervisor, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Command == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
		opts.Command = func(roleName string) *exec.Cmd {
			return exec.Command(exe, roleName, "--config", configPath)
		}
	}
	roles := Roles(cfg)
	m, err := newMetrics(opts.Registerer, roles)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		cfg:   cfg,
		roles: roles,
		opts:  opts,
		log:   opts.Logger,
		pluginLog: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Output:     opts.Stderr,
			Level:      hclog.Warn,
			JSONFormat: true,
		}),
		metrics:  m,
		started:  time.Now(),
		children: map[string]*child{},
	}
	names := make([]string, 0, len(cfg.Datasets))
	for _, d := range cfg.Datasets {
		names = append(names, d.Name)
	}
	s.pauses, err = pause.NewController(cfg.Ingestion.WAL.Dir, names, s.consumerApplier, opts.Logger)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Pauses is the controller of the operators' pauses, which the control
// socket serves (see shared/pause).
func (s *Supervisor) Pauses() *pause.Controller { return s.pauses }

// rpcTimeout bounds one Pause or Resume call to the consumer child.
const rpcTimeout = 5 * time.Second

// consumerApplier returns the running consumer child as the target of
// pauses, or nil while none runs.
func (s *Supervisor) consumerApplier() pause.Applier {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[role.Consumer]
	if c == nil {
		return nil
	}
	return timedApplier{c.role}
}

// timedApplier bounds each call to the child: a child that hangs must not
// hold the operator's command, nor the next start's Sync.
type timedApplier struct{ r rpc.Role }

func (a timedApplier) Pause(ctx context.Context, dataset string, e pause.Entry) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return a.r.Pause(ctx, dataset, e)
}

func (a timedApplier) Resume(ctx context.Context, dataset string) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return a.r.Resume(ctx, dataset)
}

// Run starts the roles and keeps them running until ctx ends, then drains
// them within cfg.DrainTimeout() counted from ctx's end, kills any child
// left at the deadline, and returns nil once no child is left.
func (s *Supervisor) Run(ctx context.Context) error {
	// One budget for the whole drain, fixed by the first role goroutine
	// that sees ctx end; the others see it within microseconds.
	drainDeadline := sync.OnceValue(func() time.Time {
		s.log.Info("draining roles", "budget", s.cfg.DrainTimeout().String())
		return time.Now().Add(s.cfg.DrainTimeout())
	})
	var g errgroup.Group
	for _, r := range s.roles {
		g.Go(func() error {
			s.keep(ctx, r, drainDeadline)
			return nil
		})
	}
	err := g.Wait()
	s.log.Info("all roles stopped")
	return err
}

// keep runs one role's child, restarts it when it exits unexpectedly, and
// drains it once ctx ends.
func (s *Supervisor) keep(ctx context.Context, roleName string, drainDeadline func() time.Time) {
	var b backoff
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			s.metrics.restarts.WithLabelValues(roleName).Inc()
		}
		var ran time.Duration
		c, err := s.start(roleName)
		if err != nil {
			s.log.Error("start role", "child", roleName, "error", err)
		} else {
			s.setChild(roleName, c)
			s.log.Info("role started", "child", roleName, "pid", c.pid)
			if roleName == role.Consumer {
				// The child read the pause record when it started; a pause
				// or resume recorded since then, while it could not be
				// reached, reaches it now (pause.Controller.Sync).
				if err := s.pauses.Sync(context.WithoutCancel(ctx)); err != nil {
					s.log.Warn("tell the consumer the operators' pauses: it applies the record at its next start", "child", roleName, "error", err)
				}
			}
			exited := c.waitExit(ctx)
			if !exited {
				s.drain(c, drainDeadline())
				s.setChild(roleName, nil)
				return
			}
			// The process is gone and reaped; Kill closes go-plugin's
			// gRPC connection to it.
			c.client.Kill()
			ran = time.Since(c.started)
			s.setChild(roleName, nil)
			if ctx.Err() != nil {
				s.log.Info("role exited while stopping", "child", roleName, "pid", c.pid, "exit", c.exitStatus())
				return
			}
			s.log.Error("role exited", "child", roleName, "pid", c.pid, "ran", ran.Round(time.Millisecond).String(), "exit", c.exitStatus())
		}
		delay := b.delay(ran)
		s.log.Info("restarting role", "child", roleName, "delay", delay.String())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// drain stops a child in order within the deadline, then makes sure it is
// gone.
func (s *Supervisor) drain(c *child, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	log := s.log.With("child", c.name, "pid", c.pid)
	start := time.Now()
	// A drained child exits by itself, possibly before Drain's answer gets
	// through; its exit code, not the answer, tells how the drain went.
	drainErr := c.role.Drain(ctx)
	if !c.waitExit(ctx) {
		log.Warn("drain budget spent: killing role", "error", drainErr)
		_ = c.cmd.Process.Kill()
		c.client.Kill() // returns once the process is reaped
		log.Warn("role killed", "exit", c.exitStatus())
		return
	}
	c.client.Kill() // the process has exited: this closes the connection
	took := time.Since(start).Round(time.Millisecond).String()
	if c.cmd.ProcessState.Success() {
		log.Info("role drained", "took", took)
		return
	}
	log.Warn("role stopped with an error", "took", took, "exit", c.exitStatus(), "error", drainErr)
}

func (s *Supervisor) setChild(roleName string, c *child) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		delete(s.children, roleName)
		s.metrics.up.WithLabelValues(roleName).Set(0)
		return
	}
	s.children[roleName] = c
	s.metrics.up.WithLabelValues(roleName).Set(1)
}

// Roles returns the children the supervisor runs for cfg: the roles of the
// record path, and the maintainer unless maintenance.enabled is false.
// The maintainer holds no local state and drains at once, side by side
// with the others.
func Roles(cfg *config.Config) []string {
	roles := slices.Clone(role.All)
	if cfg.Maintenance.Enabled {
		roles = append(roles, role.Maintainer)
	}
	return roles
}
