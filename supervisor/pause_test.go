package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/role"
)

// TestPauseReachesTheConsumerChild pauses a dataset through the
// supervisor's controller: the consumer child hears of it over the RPC
// channel, the supervisor's status shows it, and a consumer child started
// after a crash is told again; a resume reaches it too.
func TestPauseReachesTheConsumerChild(t *testing.T) {
	h := startSupervisor(t, 10*time.Second)
	h.run()
	before := h.waitRunning()
	ctx := context.Background()
	told := func() string {
		b, _ := os.ReadFile(filepath.Join(h.dir, role.Consumer+".paused"))
		return string(b)
	}

	a, err := h.s.Pauses().Pause(ctx, []string{"orders"}, "alice (uid 1000)", "catalog migration")
	if err != nil || !a.Applied {
		t.Fatalf("pause = %+v, %v; want applied", a, err)
	}
	if want := fmt.Sprintf("%d:orders", before[role.Consumer]); told() != want {
		t.Fatalf("consumer was told %q, want %q", told(), want)
	}
	paused := h.s.Status().Paused
	if e := paused["orders"]; e.By != "alice (uid 1000)" || e.Reason != "catalog migration" || e.Since.IsZero() {
		t.Fatalf("supervisor status paused = %v, want orders with who, why and since when", paused)
	}

	// A new consumer child is told at its start.
	if err := syscall.Kill(before[role.Consumer], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitFor("new consumer told of the pause", 20*time.Second, func() bool {
		p := h.pid(role.Consumer)
		return p != 0 && p != before[role.Consumer] && told() == fmt.Sprintf("%d:orders", p)
	})

	a, err = h.s.Pauses().Resume(ctx, nil)
	if err != nil || !a.Applied || len(a.Paused) != 0 {
		t.Fatalf("resume = %+v, %v", a, err)
	}
	if want := fmt.Sprintf("%d:", h.pid(role.Consumer)); told() != want {
		t.Fatalf("consumer was told %q after the resume, want %q", told(), want)
	}
	if len(h.s.Status().Paused) != 0 {
		t.Fatal("supervisor status still shows a pause after the resume")
	}
	if err, _ := h.stop(20 * time.Second); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}
