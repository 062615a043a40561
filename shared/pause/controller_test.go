package pause

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeConsumer is the Applier the controller tells; a function-field
// fake because the real one (the consumer) needs Kafka and a catalog:
// consumer/gate_test.go and the e2e test cover it.
type fakeConsumer struct {
	mu     sync.Mutex
	paused map[string]Entry
	fail   error
}

func (f *fakeConsumer) Pause(_ context.Context, ds string, e Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.paused[ds] = e
	return nil
}

func (f *fakeConsumer) Resume(_ context.Context, ds string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	delete(f.paused, ds)
	return nil
}

func (f *fakeConsumer) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.paused {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func TestControllerPauseResume(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cons := &fakeConsumer{paused: map[string]Entry{}}
	var running Applier = cons
	c, err := NewController(dir, []string{"orders", "clicks"}, func() Applier { return running }, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC) }

	a, err := c.Pause(ctx, []string{"orders"}, "alice (uid 1000)", "catalog migration")
	if err != nil || !a.Applied || !slices.Equal(a.Changed, []string{"orders"}) {
		t.Fatalf("pause orders = %+v, %v", a, err)
	}
	if got := cons.names(); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("consumer paused %v, want orders", got)
	}
	rec, err := Read(dir)
	if err != nil || rec.Datasets["orders"].By != "alice (uid 1000)" || rec.Datasets["orders"].Reason != "catalog migration" {
		t.Fatalf("record = %+v, %v", rec, err)
	}

	// Pausing again keeps the first pause.
	a, err = c.Pause(ctx, []string{"orders"}, "bob", "other")
	if err != nil || len(a.Changed) != 0 || a.Paused["orders"].By != "alice (uid 1000)" {
		t.Fatalf("second pause = %+v, %v; want the first kept", a, err)
	}

	if _, err := c.Pause(ctx, []string{"nope"}, "alice", ""); !errors.Is(err, ErrUnknownDataset) {
		t.Fatalf("pause of an unknown dataset = %v", err)
	}

	// With no consumer running, the pause is recorded but not applied.
	running = nil
	a, err = c.Pause(ctx, nil, "alice", "incident")
	if err != nil || a.Applied || a.Note == "" || !slices.Equal(a.Changed, []string{"clicks"}) {
		t.Fatalf("pause all without a consumer = %+v, %v", a, err)
	}
	// A consumer that starts is told by Sync.
	running = cons
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cons.names(); !slices.Equal(got, []string{"clicks", "orders"}) {
		t.Fatalf("after Sync consumer paused %v, want both", got)
	}

	// A consumer that fails the call: recorded all the same.
	cons.fail = fmt.Errorf("connection reset")
	a, err = c.Resume(ctx, []string{"orders"})
	if err != nil || a.Applied || !slices.Equal(a.Changed, []string{"orders"}) {
		t.Fatalf("resume with a failing consumer = %+v, %v", a, err)
	}
	if rec, _ := Read(dir); len(rec.Datasets) != 1 || rec.Datasets["clicks"].Reason != "incident" {
		t.Fatalf("record after the resume = %+v, want clicks only", rec)
	}
	cons.fail = nil

	// A new controller (a restarted supervisor) reads the record.
	c2, err := NewController(dir, []string{"orders", "clicks"}, func() Applier { return cons }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cons.names(); !slices.Equal(got, []string{"clicks"}) {
		t.Fatalf("after a restart's Sync consumer paused %v, want clicks", got)
	}
	a, err = c2.Resume(ctx, nil)
	if err != nil || !a.Applied || !slices.Equal(a.Changed, []string{"clicks"}) || len(cons.names()) != 0 {
		t.Fatalf("resume all = %+v, %v; consumer %v", a, err, cons.names())
	}
}
