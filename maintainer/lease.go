package maintainer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/kafkaclient"
)

// LeaseKafka and LeaseNone are the values of maintenance.lease.
const (
	LeaseKafka = "kafka"
	LeaseNone  = "none"
)

// GroupSuffix ends the Kafka group in which the maintainers of a dataset
// meet: <the dataset's consumerGroup><GroupSuffix>.
const GroupSuffix = ".maintainer"

// leases makes one maintainer per table across all pods, with what every
// deployment already has: Kafka's group membership. The maintainer of each
// pod joins, per dataset, the group <consumerGroup>.maintainer subscribed
// to the dataset's topic, and upkeeps the table only while the group
// assigns it the topic's partition 0, which Kafka gives to exactly one
// member. It reads no record (the topic's fetching is paused) and commits
// no offset: the group is only the lease.
//
// Handing over. When a rebalance takes partition 0 away (a pod joined or
// left), the revoke callback marks the table not owned and waits for the
// pass under way on it to end before the rebalance goes on, so the next
// owner starts only once this one stopped (bounded by the pass timeout).
// A member that lost its session (it could not reach Kafka for the session
// timeout) learns it at its next contact and stops; in the meantime the
// new owner may have started. Even then the steps commit with optimistic
// concurrency, so two maintainers cost a retried commit and orphaned
// compaction output, never a wrong table.
//
// A pod that dies without leaving (SIGKILL, a lost node) keeps its tables
// until the broker drops its member: the session timeout of the group,
// maintenance.leaseSessionTimeoutSeconds, 6 s by default where a Kafka
// consumer's default is 45 s. A pod that drains leaves at once (close).
type leases struct {
	log     *slog.Logger
	clients []*kgo.Client
	// cancels cancel each client's context: what interrupts a group join
	// in flight at the drain (see close).
	cancels []context.CancelFunc
	// opts connect a client to Kafka without a group, for the explicit
	// LeaveGroup of close.
	opts []kgo.Opt

	// gained is signalled when a table's lease is gained, so that Run
	// upkeeps it at once rather than at the next interval.
	gained chan struct{}

	mu    sync.Mutex
	owned map[string]bool // dataset -> holds the lease
	// busy is held by the upkeep of a dataset during a pass, and taken by
	// the revoke callback to wait for it.
	busy map[string]*sync.Mutex
}

// newLeases joins the groups of cfg's datasets. With maintenance.lease
// none it returns nil: every dataset is owned (a single pod, or a test).
// extra options are added to each group client's (tests cut a client off
// from the broker with a dialer of their own).
func newLeases(cfg *config.Config, log *slog.Logger, extra ...kgo.Opt) (*leases, error) {
	if cfg.Maintenance.Lease == LeaseNone {
		return nil, nil
	}
	l := &leases{log: log, owned: map[string]bool{}, busy: map[string]*sync.Mutex{}, gained: make(chan struct{}, 1)}
	for _, d := range cfg.Datasets {
		l.busy[d.Name] = &sync.Mutex{}
	}
	base, err := kafkaclient.Opts(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	l.opts = base
	session := cfg.LeaseSessionTimeout()
	for _, d := range cfg.Datasets {
		opts := slices.Clone(base)
		name, topic := d.Name, d.Topic
		set := func(owned bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
				if !slices.Contains(parts[topic], 0) {
					return
				}
				if !owned {
					l.mu.Lock()
					l.owned[name] = false
					l.mu.Unlock()
					// Wait for the pass under way to end before the
					// rebalance hands the table to another pod.
					l.busy[name].Lock()
					l.busy[name].Unlock() //nolint:staticcheck // a wait, not a critical section
				} else {
					l.mu.Lock()
					l.owned[name] = true
					l.mu.Unlock()
					select {
					case l.gained <- struct{}{}:
					default: // a pass is owed already
					}
				}
				log.Info("maintainer lease", "dataset", name, "owned", owned)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		opts = append(opts,
			kgo.WithContext(ctx),
			// A short session: when the owner's pod dies without leaving,
			// its tables go without upkeep until the broker drops it.
			// The group holds no offsets and no records, so a member
			// that misses its heartbeats for a moment costs only a
			// handover, and a heartbeat a second per dataset is nothing.
			kgo.SessionTimeout(session),
			kgo.HeartbeatInterval(heartbeatInterval(session)),
			kgo.ConsumerGroup(d.ConsumerGroup+GroupSuffix),
			kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(set(true)),
			kgo.OnPartitionsRevoked(set(false)),
			kgo.OnPartitionsLost(set(false)),
		)
		opts = append(opts, extra...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			cancel()
			l.close()
			return nil, fmt.Errorf("maintainer lease of dataset %s: %w", name, err)
		}
		cl.PauseFetchTopics(topic) // membership only: no record is read
		l.clients = append(l.clients, cl)
		l.cancels = append(l.cancels, cancel)
	}
	return l, nil
}

// hold reports whether this maintainer holds dataset's lease, and if so
// holds it against a handover until release is called.
func (l *leases) hold(dataset string) (release func(), ok bool) {
	if l == nil {
		return func() {}, true
	}
	b := l.busy[dataset]
	b.Lock()
	l.mu.Lock()
	ok = l.owned[dataset]
	l.mu.Unlock()
	if !ok {
		b.Unlock()
		return nil, false
	}
	return b.Unlock, true
}

// gainedC returns a channel that receives when a lease was gained since
// the last receive; nil (never ready) without leases.
func (l *leases) gainedC() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.gained
}

// owns reports whether this maintainer holds dataset's lease now.
func (l *leases) owns(dataset string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owned[dataset]
}

// heartbeatInterval is the heartbeat of a member whose session times out
// after session: six a session, so that a member misses several before
// the broker drops it.
func heartbeatInterval(session time.Duration) time.Duration {
	return max(session/6, 100*time.Millisecond)
}

// leaveGrace is how long close lets a client leave its group the usual
// way before it interrupts a join in flight.
const leaveGrace = 500 * time.Millisecond

// leaveTimeout bounds the explicit LeaveGroup that follows an interrupted
// join.
const leaveTimeout = time.Second

// close leaves the groups, so that another pod takes the tables over at
// once rather than after the session timeout, within about
// leaveGrace+leaveTimeout whatever the groups are doing.
//
// franz-go's Close sends the LeaveGroup only once a join or sync in
// flight is answered, and it sends them with the client's own context,
// so that a final commit can follow a revoke. A broker answers a join
// only when every member it counts has joined again or timed out: right
// after a restart it still counts the member of the killed process, and
// the join, and with it Close, waits for that member's session timeout.
// Here no commit is owed, so after leaveGrace close cancels the client's
// context, which fails the join and lets Close return at once, and then
// sends the LeaveGroup itself for the member id the broker gave, on a
// client of its own, so that the broker drops the member now rather than
// at its session timeout.
func (l *leases) close() {
	if l == nil {
		return
	}
	var wg sync.WaitGroup
	for i, cl := range l.clients {
		wg.Go(func() { l.leave(cl, l.cancels[i]) })
	}
	wg.Wait()
	l.clients, l.cancels = nil, nil
}

// leave closes cl, a client in a group, within about
// leaveGrace+leaveTimeout; see close.
func (l *leases) leave(cl *kgo.Client, cancel context.CancelFunc) {
	defer cancel()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		cl.Close()
	}()
	grace := time.NewTimer(leaveGrace)
	defer grace.Stop()
	select {
	case <-closed:
		return
	case <-grace.C:
	}
	group, _ := cl.OptValue(kgo.ConsumerGroup).(string)
	member, _ := cl.GroupMetadata()
	cancel()
	<-closed
	if member == "" {
		return // the broker has not named the member yet: nothing to leave
	}
	ctx, stop := context.WithTimeout(context.Background(), leaveTimeout)
	defer stop()
	if err := leaveGroup(ctx, l.opts, group, member); err != nil {
		l.log.Warn("leave the maintainers' group; the broker drops the member at its session timeout", "group", group, "member", member, "err", err)
		return
	}
	l.log.Info("left the maintainers' group during a join", "group", group, "member", member)
}

// leaveGroup asks the broker to drop member from group, on a client of
// opts that joins no group.
func leaveGroup(ctx context.Context, opts []kgo.Opt, group, member string) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = member
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = member
	m.Reason = kmsg.StringPtr("maintainer draining")
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, m := range resp.Members {
		if err := kerr.ErrorForCode(m.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return err
		}
	}
	return nil
}
