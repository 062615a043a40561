package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	itest "github.com/icewal/ingestor/internal/testutil"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// harness is a supervisor of test roles running in the background.
type harness struct {
	t      *testing.T
	dir    string
	s      *Supervisor
	reg    *prometheus.Registry
	stderr *itest.SyncBuffer
	cancel context.CancelFunc
	done   chan error
}

func startSupervisor(t *testing.T, drain time.Duration, env ...string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), reg: prometheus.NewRegistry(), stderr: &itest.SyncBuffer{}, done: make(chan error, 1)}
	var err error
	h.s, err = New(testConfig(h.dir, drain), "", Options{
		Logger:     slog.New(slog.NewJSONHandler(h.stderr, nil)).With("role", "supervisor"),
		Registerer: h.reg,
		Command:    testCommand(h.dir, env...),
		Stderr:     h.stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.s.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			h.t.Error("Run did not return 30s after its context ended")
		}
		if h.t.Failed() {
			h.t.Logf("children's stderr:\n%s", h.stderr.String())
		}
	})
}

// stop cancels Run and returns its error and how long it took.
func (h *harness) stop(within time.Duration) (error, time.Duration) {
	h.t.Helper()
	start := time.Now()
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err, time.Since(start)
	case <-time.After(within):
		h.t.Fatalf("Run did not return within %s of its context ending", within)
		return nil, 0
	}
}

func (h *harness) readInt(name string) int64 {
	b, err := os.ReadFile(filepath.Join(h.dir, name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

func (h *harness) pid(roleName string) int { return int(h.readInt(roleName + ".pid")) }

func (h *harness) waitFor(what string, within time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunning waits until every role wrote its pid and answers Status with
// that pid, and returns the pids.
func (h *harness) waitRunning() map[string]int {
	h.t.Helper()
	pids := map[string]int{}
	h.waitFor("all roles running", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := h.s.statuses(ctx)
		if err != nil || len(st) != len(role.All) {
			return false
		}
		for _, r := range role.All {
			if st[r].PID != h.pid(r) || st[r].Role != r || st[r].State != "running" {
				return false
			}
			pids[r] = st[r].PID
		}
		return true
	})
	return pids
}

func (h *harness) restarts(roleName string) float64 {
	return testutil.ToFloat64(h.s.metrics.restarts.WithLabelValues(roleName))
}

func (h *harness) up(roleName string) float64 {
	return testutil.ToFloat64(h.s.metrics.up.WithLabelValues(roleName))
}

func waitGone(t *testing.T, pids map[string]int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for r, pid := range pids {
		for itest.Alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s child %d still alive after %s", r, pid, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestKilledChildIsRestartedAlone(t *testing.T) {
	h := startSupervisor(t, 10*time.Second)
	h.run()
	before := h.waitRunning()

	if err := syscall.Kill(before[role.Consumer], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	beatsAtKill := h.readInt(role.Uploader + ".heartbeat")
	h.waitFor("consumer restarted with a new pid", 20*time.Second, func() bool {
		p := h.pid(role.Consumer)
		return p != 0 && p != before[role.Consumer]
	})
	after := h.waitRunning()

	if after[role.Uploader] != before[role.Uploader] || after[role.Committer] != before[role.Committer] {
		t.Errorf("pids before %v, after %v: only the consumer may change", before, after)
	}
	if itest.Alive(before[role.Consumer]) {
		t.Errorf("killed consumer %d still alive", before[role.Consumer])
	}
	if beats := h.readInt(role.Uploader + ".heartbeat"); beats <= beatsAtKill {
		t.Errorf("uploader heartbeat %d -> %d: it stopped working while the consumer restarted", beatsAtKill, beats)
	}
	for r, want := range map[string]float64{role.Consumer: 1, role.Uploader: 0, role.Committer: 0} {
		if got := h.restarts(r); got != want {
			t.Errorf("restarts{role=%s} = %v, want %v", r, got, want)
		}
		if got := h.up(r); got != 1 {
			t.Errorf("up{role=%s} = %v, want 1", r, got)
		}
	}

	err, _ := h.stop(20 * time.Second)
	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	waitGone(t, map[string]int{"old consumer": before[role.Consumer], "consumer": after[role.Consumer], "uploader": after[role.Uploader], "committer": after[role.Committer]}, time.Second)
}

func TestFailingChildIsRestarted(t *testing.T) {
	h := startSupervisor(t, 10*time.Second)
	if err := os.WriteFile(filepath.Join(h.dir, role.Uploader+".fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.run()
	h.waitRunning()
	if took := time.Since(start); took < minRestartDelay {
		t.Errorf("failed uploader running again after %s, before the %s restart delay", took, minRestartDelay)
	}
	for r, want := range map[string]float64{role.Consumer: 0, role.Uploader: 1, role.Committer: 0} {
		if got := h.restarts(r); got != want {
			t.Errorf("restarts{role=%s} = %v, want %v", r, got, want)
		}
	}
	if out := h.stderr.String(); !strings.Contains(out, "failing on demand") {
		t.Errorf("the child's error did not reach the supervisor's stderr:\n%s", out)
	}
	if err, _ := h.stop(20 * time.Second); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestDrainInOrder(t *testing.T) {
	h := startSupervisor(t, 20*time.Second)
	h.run()
	pids := h.waitRunning()

	err, took := h.stop(20 * time.Second)
	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if took > 10*time.Second {
		t.Errorf("drain took %s, the test roles drain in well under a second", took)
	}
	// Run returns with no child left.
	for r, pid := range pids {
		if itest.Alive(pid) {
			t.Errorf("%s child %d alive after Run returned", r, pid)
		}
	}
	var last int64
	for _, r := range role.All {
		at := h.readInt(r + ".drained")
		if at == 0 {
			t.Fatalf("%s did not drain", r)
		}
		if at < last {
			t.Errorf("%s drained before its upstream role", r)
		}
		last = at
		if got := h.up(r); got != 0 {
			t.Errorf("up{role=%s} = %v after Run, want 0", r, got)
		}
	}
	// The children's JSON logs reach the supervisor's stderr.
	out := h.stderr.String()
	for _, r := range role.All {
		if !strings.Contains(out, `"msg":"test role drained","role":"`+r+`"`) {
			t.Errorf("no drain log of %s in the supervisor's stderr", r)
		}
	}
	// Each drained child exited by itself with code 0.
	for _, r := range role.All {
		if !strings.Contains(out, `"msg":"role drained","role":"supervisor","child":"`+r+`"`) {
			t.Errorf("the supervisor did not log %s as drained", r)
		}
	}
	if strings.Contains(out, "killing role") || strings.Contains(out, `"@level":"warn"`) {
		t.Errorf("warnings in a clean drain:\n%s", out)
	}
}

func TestDrainDeadlineKillsChild(t *testing.T) {
	budget := 1500 * time.Millisecond
	h := startSupervisor(t, budget, envTestHang+"="+role.Committer)
	h.run()
	pids := h.waitRunning()

	err, took := h.stop(20 * time.Second)
	if err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if took < budget || took > budget+3*time.Second {
		t.Errorf("Run returned %s after cancel, want just after the %s budget", took, budget)
	}
	for r, pid := range pids {
		if itest.Alive(pid) {
			t.Errorf("%s child %d alive after Run returned", r, pid)
		}
	}
	if h.readInt(role.Consumer+".drained") == 0 || h.readInt(role.Uploader+".drained") == 0 {
		t.Error("consumer and uploader did not drain while the committer hung")
	}
	if h.readInt(role.Committer+".drained") != 0 {
		t.Error("hanging committer drained")
	}
	if out := h.stderr.String(); !strings.Contains(out, `"msg":"role killed","role":"supervisor","child":"committer"`) {
		t.Errorf("the supervisor did not log the committer's kill:\n%s", out)
	}
}

func TestKilledSupervisorLeavesNoOrphans(t *testing.T) {
	dir := t.TempDir()
	sup := exec.Command(os.Args[0], "-test.run=^$")
	sup.Env = append(os.Environ(), envSupervisor+"=1", envTestDir+"="+dir)
	stderr := &itest.SyncBuffer{}
	sup.Stderr = stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sup.Process.Kill()
		_ = sup.Wait()
		if t.Failed() {
			t.Logf("supervisor's stderr:\n%s", stderr.String())
		}
	})
	h := &harness{t: t, dir: dir}
	pids := map[string]int{}
	h.waitFor("all roles running under the supervisor process", 30*time.Second, func() bool {
		for _, r := range role.All {
			if pids[r] = h.pid(r); pids[r] == 0 {
				return false
			}
		}
		return true
	})
	t.Cleanup(func() { // only if the test failed: orphans are not left to the machine
		for _, pid := range pids {
			if itest.Alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for r, pid := range pids {
		if !itest.Alive(pid) {
			t.Fatalf("%s child %d not running", r, pid)
		}
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sup.Wait()
	waitGone(t, pids, 5*time.Second)
}

// The maintainer is a child of the supervisor unless maintenance.enabled
// is false; the record-path roles always are.
func TestRolesMaintainer(t *testing.T) {
	cfg := testConfig(t.TempDir(), time.Second)
	cfg.Maintenance.Enabled = true
	if got, want := Roles(cfg), append(slices.Clone(role.All), role.Maintainer); !slices.Equal(got, want) {
		t.Errorf("roles with maintenance enabled %v, want %v", got, want)
	}
	cfg.Maintenance.Enabled = false
	if got := Roles(cfg); !slices.Equal(got, role.All) {
		t.Errorf("roles with maintenance disabled %v, want %v", got, role.All)
	}
}

// statuses asks every running child for its status, each within ctx. Roles
// whose child is not running are absent; failed answers are joined in the
// error.
func (s *Supervisor) statuses(ctx context.Context) (map[string]rolestatus.Status, error) {
	s.mu.Lock()
	children := make([]*child, 0, len(s.children))
	for _, c := range s.children {
		children = append(children, c)
	}
	s.mu.Unlock()
	out := map[string]rolestatus.Status{}
	var errs []error
	for _, c := range children {
		st, err := c.role.Status(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("status of %s: %w", c.name, err))
			continue
		}
		out[c.name] = st
	}
	return out, errors.Join(errs...)
}
