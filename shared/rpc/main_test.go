package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/testutil"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// Environment that turns the test binary into a child role or a host.
const (
	envChildMode  = "INGESTOR_RPC_TEST_CHILD"
	envDrainDelay = "INGESTOR_RPC_TEST_DRAIN_DELAY"
	envRunError   = "INGESTOR_RPC_TEST_RUN_ERROR"
	envHost       = "INGESTOR_RPC_TEST_HOST"
)

func TestMain(m *testing.M) {
	if IsChild() && os.Getenv(envChildMode) != "" {
		serveTestChild(os.Getenv(envChildMode))
		return
	}
	if os.Getenv(envHost) != "" {
		os.Exit(runTestHost())
	}
	goleak.VerifyTestMain(m)
}

// testPauser records Pause and Resume so that Status can report them.
type testPauser struct {
	mu        sync.Mutex
	paused    map[string]pause.Entry
	pauseOnce sync.Once
	pausedCh  chan struct{} // closed at the first Pause
}

func (p *testPauser) Pause(_ context.Context, dataset string, e pause.Entry) error {
	p.mu.Lock()
	p.paused[dataset] = e
	p.mu.Unlock()
	p.pauseOnce.Do(func() { close(p.pausedCh) })
	return nil
}

func (p *testPauser) Resume(_ context.Context, dataset string) error {
	p.mu.Lock()
	delete(p.paused, dataset)
	p.mu.Unlock()
	return nil
}

func (p *testPauser) state() map[string]pause.Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.paused)
}

// serveTestChild runs a child role whose behaviour the test chooses:
//   - wait: run until drained, then take envDrainDelay and return
//     envRunError (if set) as its error;
//   - fail-on-pause: return an error, with no drain, at the first Pause;
//   - panic-status: like wait, but its status function panics.
func serveTestChild(mode string) {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("role", "testrole")
	delay, _ := time.ParseDuration(os.Getenv(envDrainDelay))
	pauser := &testPauser{paused: map[string]pause.Entry{}, pausedCh: make(chan struct{})}
	run := func(ctx context.Context) error {
		if mode == "fail-on-pause" {
			<-pauser.pausedCh
			return errors.New("failing on purpose")
		}
		<-ctx.Done()
		time.Sleep(delay)
		if msg := os.Getenv(envRunError); msg != "" {
			return errors.New(msg)
		}
		return nil
	}
	status := func() rolestatus.Details {
		if mode == "panic-status" {
			panic("status on purpose")
		}
		// Types structpb cannot take as they are (structs, maps of them,
		// times): the Status crosses as JSON.
		c := &rolestatus.Consumer{HighWatermarkPct: 42, Datasets: map[string]rolestatus.ConsumerDataset{
			"clicks": {Topic: mode, Stalled: []string{"a", "b"}, Dropped: map[string]float64{"not_json": 3}},
		}}
		for name, e := range pauser.state() {
			c.Datasets[name] = rolestatus.ConsumerDataset{Paused: true, OperatorPause: &e}
		}
		return rolestatus.Details{Consumer: c}
	}
	ServeChild(role.Consumer, run, status,
		WithLogger(log), WithMetricsAddress("127.0.0.1:1234"), WithPauser(pauser))
}

// runTestHost starts a wait child without Pdeathsig, prints its pid on
// stdout and waits to be killed: the test checks the child notices.
func runTestHost() int {
	cmd := testCommand("wait")
	c := NewClient(cmd, os.Stderr, hclog.NewNullLogger())
	if _, err := Dispense(c); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		return 1
	}
	fmt.Printf("%d\n", cmd.Process.Pid)
	time.Sleep(time.Minute)
	c.Kill()
	return 0
}

// operatorPauses are the datasets a test child's status shows paused by
// an operator.
func operatorPauses(st rolestatus.Status) map[string]pause.Entry {
	out := map[string]pause.Entry{}
	if st.Details.Consumer == nil {
		return out
	}
	for name, ds := range st.Details.Consumer.Datasets {
		if ds.OperatorPause != nil {
			out[name] = *ds.OperatorPause
		}
	}
	return out
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for testutil.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %s", pid, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
