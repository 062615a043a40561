package maintainer

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two pods' maintainers on one table, meeting in a real Kafka group
// (kfake): exactly one holds the lease and upkeeps; the small files are
// compacted once, by it, and the other commits nothing. When the owner
// leaves, the other takes the table over.
func TestTwoMaintainersOneLease(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Maintenance.CompactionFanIn = 4
	for i := range int64(8) {
		appendNotes(t, cfg, []int64{i})
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ms := make([]*Maintainer, 2)
	ls := make([]*leases, 2)
	for i := range ms {
		ms[i], _ = newMaintainer(t, cfg)
		if ls[i], err = newLeases(cfg, log); err != nil {
			t.Fatal(err)
		}
		ms[i].lease = ls[i]
	}
	defer func() {
		for _, l := range ls {
			l.close()
		}
	}()
	owners := func() (n, who int) {
		for i, l := range ls {
			if l.owns("events") {
				n, who = n+1, i
			}
		}
		return n, who
	}
	waitFor(t, 30*time.Second, "one maintainer to hold the lease", func() bool { n, _ := owners(); return n == 1 })
	_, owner := owners()
	other := 1 - owner

	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { m.pass(context.Background()) })
	}
	wg.Wait()
	if n, _ := owners(); n != 1 {
		t.Fatalf("%d maintainers hold the lease after the pass, want 1", n)
	}
	if got := testutil.ToFloat64(ms[owner].metrics.rewrittenFiles.WithLabelValues("events")); got != 8 {
		t.Errorf("the owner compacted %v files, want 8", got)
	}
	if got := testutil.ToFloat64(ms[other].metrics.rewrittenFiles.WithLabelValues("events")); got != 0 {
		t.Errorf("the other maintainer compacted %v files, want 0", got)
	}
	if got := testutil.ToFloat64(ms[other].metrics.leaseHeld.WithLabelValues("events")); got != 0 {
		t.Errorf("the other maintainer's lease gauge %v, want 0", got)
	}
	for i, m := range ms {
		if got := testutil.ToFloat64(m.metrics.failures.WithLabelValues("events", stepCompact)); got != 0 {
			t.Errorf("maintainer %d: %v compaction failures", i, got)
		}
	}
	tbl := loadTable(t, cfg)
	if got := len(compactedObjects(t, tbl)); got != 1 {
		t.Errorf("%d compacted objects, want 1: both maintainers compacted", got)
	}

	// The owner's pod stops: the other takes over.
	ls[owner].close()
	waitFor(t, 60*time.Second, "the other maintainer to take the lease over", func() bool { return ls[other].owns("events") })
}

// severable dials the broker for a client that the test can cut off from
// Kafka at once, as a SIGKILL of its process would: its connections close
// and no new one opens, and it sends no LeaveGroup.
type severable struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (s *severable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		return nil, errors.New("severed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		s.conns = append(s.conns, c)
	}
	return c, err
}

func (s *severable) sever() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	for _, c := range s.conns {
		c.Close()
	}
}

// A maintainer restarted after its process was killed joins its group
// while the broker still counts the killed member: the join is held until
// that member's session times out. A drain then must not wait for the
// join: Run returns, and the group is left, within a second, not after
// the session timeout (which cost the whole drain budget and a kill).
func TestDrainDuringGroupJoin(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Kafka.Brokers = kc.ListenAddrs()
	group := cfg.Datasets[0].ConsumerGroup + GroupSuffix

	// The killed process's member: it holds the lease, then dies without
	// leaving, with franz-go's default session timeout of 45 s.
	var cut severable
	ctxDead, cancelDead := context.WithCancel(context.Background())
	assigned := make(chan struct{}, 1)
	dead, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.Dialer(cut.dial), kgo.WithContext(ctxDead),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics("events"),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancelDead(); dead.Close() }()
	dead.PauseFetchTopics("events")
	select {
	case <-assigned:
	case <-time.After(30 * time.Second):
		t.Fatal("the first member got no assignment")
	}
	deadMember, _ := dead.GroupMetadata()
	cut.sever()

	// The restarted maintainer: its join is held by the dead member.
	joins := make(chan struct{}, 16)
	kc.ControlKey(int16(kmsg.JoinGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		select {
		case joins <- struct{}{}:
		default:
		}
		return nil, nil, false
	})
	m, _ := newMaintainer(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	select {
	case <-joins:
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted maintainer sent no JoinGroup")
	}
	time.Sleep(200 * time.Millisecond) // the join is held at the broker

	cancel()
	start := time.Now()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("run has not returned 5 s after the drain began: it waits for the group join")
	}
	took := time.Since(start)
	t.Logf("drain during a group join took %s", took.Round(time.Millisecond))

	// The group was left: only the dead member, if any, remains.
	plain, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	groups, err := kadm.NewClient(plain).DescribeGroups(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	for _, mem := range groups[group].Members {
		if mem.MemberID != deadMember {
			t.Errorf("member %s is still in %s after the drain", mem.MemberID, group)
		}
	}
}

// When the owner's pod dies without leaving, the other pod's maintainer
// takes the table over once the broker drops the dead member, after
// maintenance.leaseSessionTimeoutSeconds, not after a Kafka consumer's
// default session of 45 s, and upkeeps it at once, not at its next
// interval (a minute by default).
func TestLeaseTakenOverAfterOwnerDies(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Maintenance.LeaseSessionTimeoutSeconds = 1
	appendNotes(t, cfg, []int64{1})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	var cut severable
	owner, err := newLeases(cfg, log, kgo.Dialer(cut.dial))
	if err != nil {
		t.Fatal(err)
	}
	defer owner.close()
	waitFor(t, 30*time.Second, "the first maintainer to hold the lease", func() bool { return owner.owns("events") })

	// The other pod's maintainer, at the default interval of a minute.
	other, _ := newMaintainer(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- other.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	plain, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	group := cfg.Datasets[0].ConsumerGroup + GroupSuffix
	waitFor(t, 30*time.Second, "both maintainers in a stable group", func() bool {
		gs, err := kadm.NewClient(plain).DescribeGroups(context.Background(), group)
		return err == nil && gs[group].State == "Stable" && len(gs[group].Members) == 2
	})
	upkept := func() bool {
		return testutil.ToFloat64(other.metrics.lastRun.WithLabelValues("events", stepExpire)) > 0
	}
	if !owner.owns("events") || upkept() {
		t.Fatal("the lease moved when the second maintainer joined")
	}

	cut.sever()
	killed := time.Now()
	const bound = 5 * time.Second // the session of 1 s, its detection, a rebalance and a pass
	for !upkept() {
		if time.Since(killed) > bound {
			t.Fatalf("the table has had no upkeep for %s since its owner died (session timeout %s)", bound, cfg.LeaseSessionTimeout())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("upkeep resumed %s after the owner died, session timeout %s", time.Since(killed).Round(10*time.Millisecond), cfg.LeaseSessionTimeout())
}
