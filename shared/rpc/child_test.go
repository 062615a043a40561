package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/testutil"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
)

func testCommand(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildMode+"="+mode)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

type testChild struct {
	client *plugin.Client
	role   Role
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
}

func startChild(t *testing.T, mode string, env ...string) *testChild {
	t.Helper()
	tc := &testChild{cmd: testCommand(mode, env...), stderr: &testutil.SyncBuffer{}}
	tc.client = NewClient(tc.cmd, tc.stderr, hclog.NewNullLogger())
	t.Cleanup(tc.client.Kill)
	r, err := Dispense(tc.client)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	tc.role = r
	return tc
}

// exitCode waits for the child to exit by itself and returns its exit
// code; -1 means it died of a signal.
func (tc *testChild) exitCode(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !tc.client.Exited() {
		if time.Now().After(deadline) {
			t.Fatal("child still running 10s after its run returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tc.cmd.ProcessState.ExitCode()
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestIsChild(t *testing.T) {
	t.Setenv(Handshake.MagicCookieKey, "")
	if IsChild() {
		t.Error("IsChild without the cookie = true")
	}
	t.Setenv(Handshake.MagicCookieKey, Handshake.MagicCookieValue)
	if !IsChild() {
		t.Error("IsChild with the cookie = false")
	}
}

func TestChildServesRole(t *testing.T) {
	tc := startChild(t, "wait")
	ctx := ctxFor(t, 10*time.Second)

	st, err := tc.role.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Role != role.Consumer || st.PID != tc.cmd.Process.Pid || st.MetricsAddress != "127.0.0.1:1234" || st.State != rolestatus.StateRunning {
		t.Errorf("status = %+v, want consumer, pid %d, 127.0.0.1:1234, running", st, tc.cmd.Process.Pid)
	}
	if c := st.Details.Consumer; c == nil || c.HighWatermarkPct != 42 || c.Datasets["clicks"].Topic != "wait" || len(operatorPauses(st)) != 0 {
		t.Errorf("details = %+v", st.Details.Consumer)
	}

	// Pause and Resume carry the dataset and the operator's entry across.
	since := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	if err := tc.role.Pause(ctx, "orders", pause.Entry{By: "alice (uid 1000)", Reason: "catalog migration", Since: since}); err != nil {
		t.Fatal(err)
	}
	st, _ = tc.role.Status(ctx)
	got := operatorPauses(st)["orders"]
	if got.By != "alice (uid 1000)" || got.Reason != "catalog migration" || !got.Since.Equal(since) {
		t.Errorf("after Pause details = %+v, want orders paused by alice for the migration", st.Details.Consumer)
	}
	if err := tc.role.Resume(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if st, _ := tc.role.Status(ctx); len(operatorPauses(st)) != 0 {
		t.Errorf("after Resume details = %+v, want not paused", st.Details.Consumer)
	}

	if err := tc.role.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if code := tc.exitCode(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	// The child's logs reach the stderr given to the client, and its
	// stdout carried nothing but the handshake.
	out := tc.stderr.String()
	if !strings.Contains(out, `"msg":"role stopped"`) || !strings.Contains(out, `"role":"testrole"`) {
		t.Errorf("child stderr lacks its stop log:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("child stderr line is not JSON: %q", line)
		}
	}
}

func TestDrainReturnsRunError(t *testing.T) {
	tc := startChild(t, "wait", envRunError+"=disk on fire")
	err := tc.role.Drain(ctxFor(t, 10*time.Second))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("drain = %v, want the run error", err)
	}
	if code := tc.exitCode(t); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
}

func TestDrainDeadline(t *testing.T) {
	tc := startChild(t, "wait", envDrainDelay+"=2s")

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tc.role.Drain(cancelled); err == nil {
		t.Fatal("drain with a cancelled context = nil")
	}
	if st, err := tc.role.Status(ctxFor(t, 5*time.Second)); err != nil || st.State != rolestatus.StateRunning {
		t.Fatalf("status after a cancelled drain = %+v, %v; want running: the call must not be sent", st, err)
	}

	start := time.Now()
	err := tc.role.Drain(ctxFor(t, 300*time.Millisecond))
	if err == nil {
		t.Fatal("drain with a 300ms budget for a 2s drain = nil")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("drain with a 300ms budget took %s", took)
	}
	st, err := tc.role.Status(ctxFor(t, 5*time.Second))
	if err != nil || st.State != rolestatus.StateDraining {
		t.Fatalf("status = %+v, %v; want draining", st, err)
	}
	if err := tc.role.Drain(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatalf("second drain: %v", err)
	}
	if code := tc.exitCode(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

func TestChildExitsWhenRunFails(t *testing.T) {
	tc := startChild(t, "fail-on-pause")
	if err := tc.role.Pause(ctxFor(t, 10*time.Second), "orders", pause.Entry{By: "test"}); err != nil {
		t.Fatal(err)
	}
	if code := tc.exitCode(t); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if out := tc.stderr.String(); !strings.Contains(out, "failing on purpose") {
		t.Errorf("child stderr lacks the run error:\n%s", out)
	}
}

func TestStatusPanicIsAnError(t *testing.T) {
	tc := startChild(t, "panic-status")
	ctx := ctxFor(t, 10*time.Second)
	_, err := tc.role.Status(ctx)
	if err == nil || !strings.Contains(err.Error(), "status on purpose") {
		t.Fatalf("status = %v, want the panic as an error", err)
	}
	// The child survived the panic.
	if err := tc.role.Pause(ctx, "orders", pause.Entry{By: "test"}); err != nil {
		t.Fatalf("pause after a panic: %v", err)
	}
	if err := tc.role.Drain(ctx); err != nil {
		t.Fatalf("drain after a panic: %v", err)
	}
	if code := tc.exitCode(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

func TestChildIgnoresSignals(t *testing.T) {
	tc := startChild(t, "wait")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if err := tc.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	ctx := ctxFor(t, 10*time.Second)
	st, err := tc.role.Status(ctx)
	if err != nil || st.State != rolestatus.StateRunning {
		t.Fatalf("status after SIGTERM and SIGINT = %+v, %v; want running", st, err)
	}
	if err := tc.role.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if code := tc.exitCode(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

func TestChildExitsWhenParentDies(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), envHost+"=1")
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read child pid from host: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("host printed %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !testutil.Alive(pid) {
		t.Fatalf("child %d not running before its host is killed", pid)
	}

	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	waitGone(t, pid, 5*time.Second)
}
