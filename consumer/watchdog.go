package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Watchdog reasons, the values of the reason label of
// ingestor_consumer_stalled.
const (
	// StallUnassigned: partitions of the topic that no member of the
	// group owns, for longer than two session timeouts.
	StallUnassigned = "unassigned"
	// StallNoProgress: partitions this consumer owns hold committed
	// records it has not read, and it read nothing for
	// ingestion.stallTimeoutSeconds, while not paused (for the disk or by an operator).
	StallNoProgress = "no_progress"
	// StallTopicRecreated: the topic's id changed under the consumer.
	StallTopicRecreated = "topic_recreated"
)

// sessionTimeout is the consumer group session of every dataset's client.
const sessionTimeout = 6 * time.Second

// watchdog checks, every few seconds, that a dataset's consumer is making
// progress, from what the brokers say rather than from the client's own
// view: the group's assignments, the topic's id and the last stable
// offsets. Each problem is an episode: logged at error level once when it
// starts, exported as ingestor_consumer_stalled{reason} = 1 while it
// lasts, and acted on once (a rejoin of the group, the fetching of every
// owned partition resumed). A problem still there after as long again, or
// one the consumer cannot mend in place (a recreated topic), ends the
// loop with an error: the process exits and is restarted by its
// supervisor or by Kubernetes, and recovery starts it from what is on
// disk and committed.
type watchdog struct {
	l     *loop
	log   *slog.Logger
	adm   *kadm.Client
	now   func() time.Time
	stall time.Duration // ingestion.stallTimeoutSeconds
	// unassignedAfter is how long partitions may have no owner: two
	// session timeouts, the time a dead member's session takes to expire
	// plus a rebalance.
	unassignedAfter time.Duration

	topicID [16]byte
	// theirs follows the partitions other members own: their committed
	// offset and since when it has not moved while records wait.
	theirs     map[int32]idleOwner
	since      map[string]time.Time // when each problem was first seen
	acted      map[string]time.Time // when the watchdog acted on it
	lastPos    map[int32]int64      // the positions at the last progress
	progressAt time.Time
}

func newWatchdog(l *loop, log *slog.Logger, stall time.Duration) *watchdog {
	return &watchdog{
		l: l, log: log, adm: kadm.NewClient(l.cl), now: time.Now, stall: stall,
		unassignedAfter: 2 * sessionTimeout,
		since:           map[string]time.Time{}, acted: map[string]time.Time{},
		theirs: map[int32]idleOwner{}, topicID: l.topicID,
	}
}

// topicIDOf returns the topic's id as the brokers give it now, zero when
// they do not answer within 10 s or do not know the topic.
func topicIDOf(ctx context.Context, cl *kgo.Client, topic string) [16]byte {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return [16]byte{}
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return [16]byte{}
	}
	return td.ID
}

// idleOwner is what the watchdog knows of a partition another member owns.
type idleOwner struct {
	committed int64
	since     time.Time
}

// loopStuckAfter is how long the watchdog waits for the loop to take its
// error before it closes the client under it. The loop polls for at most
// 30 s at a time (ageCheckInterval), and a poll returns when the client
// closes.
const loopStuckAfter = 45 * time.Second

// watchEvery is the time between two checks.
func watchEvery(stall time.Duration) time.Duration {
	return min(max(stall/4, 100*time.Millisecond), 5*time.Second)
}

// run checks until ctx ends; a problem it cannot mend is raised to the
// loop as a fatal error.
func (d *watchdog) run(ctx context.Context) {
	t := time.NewTicker(watchEvery(d.stall))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.check(ctx); err != nil {
			// Nothing more is rotated or committed, as after any fatal
			// error (fatal.go): for a recreated topic, an offset of the
			// old topic committed now would skip records of the new one.
			d.l.failed.Store(true)
			d.l.raise(err)
			// The loop takes the error at its next turn; a loop that
			// does not come round (blocked in the client) is freed by
			// closing the client under it.
			select {
			case <-ctx.Done():
			case <-time.After(loopStuckAfter):
				d.log.Error("consumer watchdog: the consumer loop does not stop; closing its Kafka client", "dataset", d.l.ds.Name)
				d.l.abandon()
			}
			return
		}
	}
}

// check takes one look. A broker that does not answer is no episode of
// its own: the client retries, and the lack of progress shows.
func (d *watchdog) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ds := d.l.ds
	md, err := d.adm.Metadata(ctx, ds.Topic)
	if err != nil {
		return nil
	}
	td, ok := md.Topics[ds.Topic]
	if !ok || td.Err != nil {
		return nil
	}
	switch {
	case d.topicID == [16]byte{}:
		d.topicID = td.ID
	case td.ID != d.topicID:
		d.open(StallTopicRecreated, "the topic was deleted and created again: its new partitions are read from their start after a restart; check who deleted it",
			"old_topic_id", fmt.Sprintf("%x", d.topicID), "topic_id", fmt.Sprintf("%x", [16]byte(td.ID)))
		return fmt.Errorf("dataset %s: topic %s was recreated (id %x, was %x): restarting to read it from its start", ds.Name, ds.Topic, [16]byte(td.ID), d.topicID)
	}
	partitions := len(td.Partitions)

	groups, err := d.adm.DescribeGroups(ctx, ds.ConsumerGroup)
	if err != nil {
		return nil
	}
	g, ok := groups[ds.ConsumerGroup]
	if !ok || g.Err != nil {
		return nil
	}
	me, _ := d.l.cl.GroupMetadata()
	ownedBy := map[int32]bool{}
	var mine []int32
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if t.Topic != ds.Topic {
				continue
			}
			for _, p := range t.Partitions {
				ownedBy[p] = true
				if m.MemberID == me {
					mine = append(mine, p)
				}
			}
		}
	}
	// A group in the middle of a rebalance owns nothing for a moment: its
	// assignment is looked at again when it is stable, and an episode
	// under way neither ends nor restarts meanwhile (the rejoin that mend
	// forces is such a rebalance).
	if g.State == "Stable" {
		unowned := 0
		for p := range int32(partitions) {
			if !ownedBy[p] {
				unowned++
			}
		}
		// A member that died can stay in the group's assignment: kfake
		// arms no session timer for a member whose join response it could
		// not deliver (the member died waiting in a rebalance), so when
		// the leader's sync makes the group stable the dead member keeps
		// its partitions for good (seen after a consumer crashed twice in
		// a row during recovery: the new member got partitions [0,3] of
		// four and never [1,2]). A stuck process that still heartbeats
		// looks the same. A partition of another member whose committed
		// offset has not moved for a file's age plus the stall timeout
		// while records wait has no live owner either; the rejoin that
		// mend forces (a leader's rejoin rebalances the group) drops
		// members that do not rejoin.
		unowned += d.deadOwned(ctx, ownedBy, mine, partitions)
		d.l.c.m.unassigned.WithLabelValues(ds.Name).Set(float64(unowned))
		if err := d.judge(StallUnassigned, unowned > 0, d.unassignedAfter,
			"partitions of the topic have no owner in the group: a member may hold them without consuming, or the group does not rebalance; check the group's members (kafka-consumer-groups --describe)",
			"unassigned_partitions", unowned, "group_state", g.State); err != nil {
			return err
		}
	}

	// Progress: the positions of the partitions this consumer owns,
	// against their last stable offsets.
	stable, err := d.adm.ListCommittedOffsets(ctx, ds.Topic)
	if err != nil {
		return nil
	}
	pos := d.l.w.positions()
	committed, err := d.adm.FetchOffsets(ctx, ds.ConsumerGroup)
	if err != nil {
		return nil
	}
	var behind int64
	now := d.now()
	moved := false
	for _, p := range mine {
		at, ok := pos[p]
		if !ok {
			if o, ok := committed.Lookup(ds.Topic, p); ok && o.Err == nil {
				at = o.At
			}
		}
		if at != d.lastPos[p] {
			moved = true
		}
		// A partition waiting for the schema registry is held on
		// purpose, as a paused dataset is: not a stall.
		if o, ok := stable.Lookup(ds.Topic, p); ok && o.Err == nil && o.Offset > at && !d.l.schemaWaits.isWaiting(p) {
			behind += o.Offset - at
		}
	}
	if moved || d.lastPos == nil {
		d.lastPos = map[int32]int64{}
		for _, p := range mine {
			if at, ok := pos[p]; ok {
				d.lastPos[p] = at
			} else if o, ok := committed.Lookup(ds.Topic, p); ok && o.Err == nil {
				d.lastPos[p] = o.At
			}
		}
	}
	paused := d.l.c.gate.pausedFor(d.l.ds.Name)
	if moved || behind == 0 || paused || d.progressAt.IsZero() {
		d.progressAt = now
	}
	stalled := now.Sub(d.progressAt) >= d.stall
	return d.judge(StallNoProgress, stalled, 0,
		"records wait in partitions this consumer owns and it has read none of them: it resumes fetching and rejoins the group; if that does not help it exits to be restarted",
		"lag_records", behind, "partitions", mine, "idle", now.Sub(d.progressAt).Round(time.Second).String())
}

// judge follows one problem: bad says whether it is there now; after it
// has lasted grace, it opens an episode and the watchdog acts; if it is
// still there as long after the action, the loop ends with an error.
func (d *watchdog) judge(reason string, bad bool, grace time.Duration, what string, attrs ...any) error {
	now := d.now()
	if !bad {
		if !d.acted[reason].IsZero() {
			d.log.Info("consumer watchdog: recovered", "dataset", d.l.ds.Name, "reason", reason)
		}
		delete(d.since, reason)
		delete(d.acted, reason)
		d.l.c.m.stalled.WithLabelValues(d.l.ds.Name, reason).Set(0)
		return nil
	}
	if d.since[reason].IsZero() {
		d.since[reason] = now
	}
	if now.Sub(d.since[reason]) < grace {
		return nil
	}
	if d.acted[reason].IsZero() {
		d.open(reason, what, attrs...)
		d.acted[reason] = now
		d.mend()
		return nil
	}
	if limit := max(grace, d.stall); now.Sub(d.acted[reason]) >= limit {
		return fmt.Errorf("dataset %s: consumer watchdog: %s for %s after a rejoin: exiting to be restarted",
			d.l.ds.Name, reason, now.Sub(d.since[reason]).Round(time.Second))
	}
	return nil
}

// open starts an episode: one error line and the metric.
func (d *watchdog) open(reason, what string, attrs ...any) {
	d.l.c.m.stalled.WithLabelValues(d.l.ds.Name, reason).Set(1)
	d.log.Error("consumer watchdog: "+what, append([]any{"dataset", d.l.ds.Name, "topic", d.l.ds.Topic,
		"group", d.l.ds.ConsumerGroup, "reason", reason}, attrs...)...)
}

// mend resumes the fetching of every partition the client holds, unless
// the gate pauses the dataset (for the disk or an operator), and makes the client rejoin the
// group: a partition left paused, or an assignment that never settled,
// is taken up again. Records already written stay: a rejoin revokes
// partitions through the revoke callback, which rotates and commits them.
func (d *watchdog) mend() {
	d.l.c.gate.unlessPaused(d.l.ds.Name, func() {
		d.l.cl.ResumeFetchTopics(d.l.ds.Topic)
		// A partition waiting for its schema stays paused: it resumes
		// when the registry answers (schemawait.go).
		d.l.schemaWaits.resumeAllBut(d.l.cl, d.l.ds.Topic)
	})
	d.l.cl.ForceRebalance()
}

// positions returns, per partition, the offset after the last record the
// writer processed.
func (w *writer) positions() map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int32]int64, len(w.parts))
	for p, st := range w.parts {
		if st.next >= 0 {
			out[p] = st.next
		}
	}
	return out
}

// deadOwned counts the partitions other members own whose committed offset
// has not moved for the writer's maximum file age (a live owner commits at
// each rotation) plus the stall timeout, while records wait past it.
func (d *watchdog) deadOwned(ctx context.Context, ownedBy map[int32]bool, mine []int32, partitions int) int {
	ds := d.l.ds
	stable, err := d.adm.ListCommittedOffsets(ctx, ds.Topic)
	if err != nil {
		return 0
	}
	committed, err := d.adm.FetchOffsets(ctx, ds.ConsumerGroup)
	if err != nil {
		return 0
	}
	now, limit := d.now(), d.l.w.maxAge+d.stall
	dead := 0
	for p := range int32(partitions) {
		if !ownedBy[p] || slices.Contains(mine, p) {
			delete(d.theirs, p)
			continue
		}
		at := int64(0)
		if o, ok := committed.Lookup(ds.Topic, p); ok && o.Err == nil {
			at = o.At
		}
		end, ok := stable.Lookup(ds.Topic, p)
		if !ok || end.Err != nil || end.Offset <= at {
			delete(d.theirs, p)
			continue
		}
		o, seen := d.theirs[p]
		if !seen || o.committed != at {
			d.theirs[p] = idleOwner{committed: at, since: now}
			continue
		}
		if now.Sub(o.since) >= limit {
			dead++
		}
	}
	return dead
}
