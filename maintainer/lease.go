package maintainer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

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
type leases struct {
	log     *slog.Logger
	clients []*kgo.Client

	mu    sync.Mutex
	owned map[string]bool // dataset -> holds the lease
	// busy is held by the upkeep of a dataset during a pass, and taken by
	// the revoke callback to wait for it.
	busy map[string]*sync.Mutex
}

// newLeases joins the groups of cfg's datasets. With maintenance.lease
// none it returns nil: every dataset is owned (a single pod, or a test).
func newLeases(cfg *config.Config, log *slog.Logger) (*leases, error) {
	if cfg.Maintenance.Lease == LeaseNone {
		return nil, nil
	}
	l := &leases{log: log, owned: map[string]bool{}, busy: map[string]*sync.Mutex{}}
	for _, d := range cfg.Datasets {
		l.busy[d.Name] = &sync.Mutex{}
	}
	for _, d := range cfg.Datasets {
		opts, err := kafkaclient.Opts(cfg.Kafka)
		if err != nil {
			l.close()
			return nil, err
		}
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
				}
				log.Info("maintainer lease", "dataset", name, "owned", owned)
			}
		}
		opts = append(opts,
			kgo.ConsumerGroup(d.ConsumerGroup+GroupSuffix),
			kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(set(true)),
			kgo.OnPartitionsRevoked(set(false)),
			kgo.OnPartitionsLost(set(false)),
		)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("maintainer lease of dataset %s: %w", name, err)
		}
		cl.PauseFetchTopics(topic) // membership only: no record is read
		l.clients = append(l.clients, cl)
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

// owns reports whether this maintainer holds dataset's lease now.
func (l *leases) owns(dataset string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owned[dataset]
}

// close leaves the groups, so that another pod takes the tables over at
// once rather than after the session timeout.
func (l *leases) close() {
	if l == nil {
		return
	}
	for _, cl := range l.clients {
		cl.Close()
	}
	l.clients = nil
}
