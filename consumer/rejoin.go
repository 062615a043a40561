package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
)

// A consumer that stood still for longer than its session timeout (a
// SIGSTOP, a long garbage-collection pause, a throttled container) wakes
// up outside its group: the group expelled it and moved on to a new
// generation, and another member may own its partitions now. Its next
// offset commit fails with ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, and
// franz-go's heartbeat, meeting the same error, calls OnPartitionsLost and
// rejoins the group with a new member id.
//
// Rather than exit and let the next start's recovery decide about its
// files, the consumer makes the same decisions in place and carries on
// (dropGeneration):
//
//  1. every open segment is deleted, as recovery deletes active_* files:
//     their offsets were never committed, and Kafka delivers the rows
//     again to whoever owns the partitions now;
//  2. the dataset's ready files are judged by recovery's table against
//     the offsets Kafka holds now: those whose commit did not land are
//     deleted, before this directory commits their partitions again
//     (a later commit by this directory past them would make the
//     committer add rows another member may have written too);
//  3. the client's positions are moved back to the committed offsets,
//     and the records it fetched from the old positions are not written
//     (reposition): a partition the group gives back to this member
//     without an assignment callback is then read again from its
//     committed offset, not from where the old generation stopped.
//
// A crash at any point of this leaves what a crash right after a
// rotation's renames leaves (failpoint consumer.generation-lost): active
// files and ready files whose offsets were not committed, which the
// recovery at the next start deletes.

// generationLost reports whether an offset commit failed because this
// member's generation of the group is over: the commit did not land, and
// the partitions may belong to another member now.
func generationLost(err error) bool {
	return errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) ||
		errors.Is(err, kerr.FencedInstanceID)
}

// rebalancing reports whether an offset commit was refused because the
// group is rebalancing (REBALANCE_IN_PROGRESS). The commit did not land,
// and the rebalance may hand the partitions to another member, which then
// reads from the offsets committed before. Retrying in place cannot help:
// the commit runs while the poll loop holds the rebalance back
// (BlockRebalanceOnPoll), so the rebalance it waits for never completes.
// The partitions are handled as after a lost generation instead: the
// files the commit would have covered are deleted and their records read
// again from the committed offsets, by this member if the new assignment
// gives the partitions back, by their new owner otherwise. Neither copy
// is lost or doubled: the deleted files were never committed, and the
// records they held are still after the committed offset.
func rebalancing(err error) bool { return errors.Is(err, kerr.RebalanceInProgress) }

// commitVoided reports whether a failed offset commit is handled in place
// by dropGeneration rather than ending the consumer.
func commitVoided(err error) bool { return generationLost(err) || rebalancing(err) }

// dropGeneration handles every partition of the loop as recovery would
// after a commit found the generation over or the group rebalancing
// (steps 1 and 2 above) and asks
// the poll loop for step 3. It runs in the poll loop or in the revoke
// callback; neither writes records meanwhile. An error is fatal: the
// restart's recovery takes over.
func (l *loop) dropGeneration(ctx context.Context, cause error) error {
	failpoint.Hit(failpoint.ConsumerGenerationLost)
	ctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	log := l.c.log.With("dataset", l.ds.Name)
	l.repositionDue.Store(true)
	if err := l.w.discard(l.w.held()); err != nil {
		return fmt.Errorf("dataset %s: after the group generation was lost: %w", l.ds.Name, err)
	}
	committed, err := fetchCommitted(ctx, l.ds, l.cl)
	if err != nil {
		return fmt.Errorf("dataset %s: after the group generation was lost: %w", l.ds.Name, err)
	}
	dir := l.c.cfg.Ingestion.WAL.Dir
	files, err := walfile.List(dir)
	if err != nil {
		return err
	}
	// The files of an earlier topic of the same name that still wait are
	// past their commit, as at start-up (topicgen.go).
	older, err := olderFiles(dir, l.ds.Topic, [16]byte{}, files)
	if err != nil {
		return fmt.Errorf("dataset %s: after the group generation was lost: %w", l.ds.Name, err)
	}
	if err := recoverFiles(dir, l.ds, files, committed, nil, older, nil, l.c.m, log); err != nil {
		return fmt.Errorf("dataset %s: after the group generation was lost: %w", l.ds.Name, err)
	}
	if rebalancing(cause) {
		l.c.m.commitsRebalancing.WithLabelValues(l.ds.Name).Inc()
		log.Warn("offset commit refused while the consumer group rebalances: the uncommitted files were handled as recovery would and the records are read again from the committed offsets, by this consumer or by the partitions' new owner",
			"topic", l.ds.Topic, "group", l.ds.ConsumerGroup, "error", cause)
		return nil
	}
	l.c.m.rejoins.WithLabelValues(l.ds.Name).Inc()
	log.Warn("consumer group generation lost: the consumer was out of the group (paused longer than the session timeout?); its uncommitted files were handled as recovery would and it rejoins, reading again from the committed offsets",
		"topic", l.ds.Topic, "group", l.ds.ConsumerGroup, "error", cause)
	return nil
}

// reposition moves the client's position in every partition it consumes
// to the group's committed offset, or, for a partition without one, to
// where the dataset's startOffset starts it, as a new member would. It
// runs in the poll loop while the rebalance block is held, as franz-go
// asks of SetOffsets; the fetch in hand is not written.
func (l *loop) reposition(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	committed, err := fetchCommitted(ctx, l.ds, l.cl)
	if err != nil {
		return fmt.Errorf("dataset %s: reposition after the group generation was lost: %w", l.ds.Name, err)
	}
	adm := kadm.NewClient(l.cl)
	list := adm.ListStartOffsets
	if l.ds.StartOffset == "latest" {
		list = adm.ListEndOffsets
	}
	starts, err := list(ctx, l.ds.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("dataset %s: reposition after the group generation was lost: list offsets of %s: %w", l.ds.Name, l.ds.Topic, err)
	}
	at := map[int32]kgo.EpochOffset{}
	starts.Each(func(o kadm.ListedOffset) {
		off := o.Offset
		if c, ok := committed.Lookup(l.ds.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			off = c.At
		}
		at[o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	})
	l.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{l.ds.Topic: at})
	return nil
}

// held returns the partitions the writer holds state for.
func (w *writer) held() []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int32, 0, len(w.parts))
	for p := range w.parts {
		out = append(out, p)
	}
	return out
}
