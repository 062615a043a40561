package consumer

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	itest "github.com/icewal/ingestor/internal/testutil"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestFatalCommitErrorEndsRun makes the broker refuse the offset commit of
// a rotation: that is fatal, and Run must return the error (so that the
// process exits, is restarted and recovers) instead of hanging in the Kafka
// client's Close, and nothing may be committed on the way out, the revoke
// callback included. The ready files stay for the next start's recovery.
func TestFatalCommitErrorEndsRun(t *testing.T) {
	e := startConsumer(t, func(c *Consumer) { c.cfg.Ingestion.WAL.MaxFileAgeMinutes = 0.05 })
	e.produce(t, 0, 30)
	waitFor(t, "records consumed", 20*time.Second, func() bool { return e.consumed() == 30 })
	var refused int
	e.cluster.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		req := r.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused++
		return resp, nil, true
	})
	select {
	case err := <-e.done:
		if err == nil || !strings.Contains(err.Error(), "commit offsets") {
			t.Fatalf("Run returned %v, want the failed offset commit", err)
		}
		e.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of a refused offset commit")
	}
	if refused != 1 {
		t.Errorf("%d offset commits tried, want 1: nothing is committed after a fatal error", refused)
	}
	if got := e.committed(t); got != 0 {
		t.Errorf("offsets committed: %d, want none", got)
	}
	if len(readyFiles(t, e.cfg.Ingestion.WAL.Dir)) == 0 {
		t.Fatal("no ready file left for recovery")
	}
	if files, _ := walfile.List(e.cfg.Ingestion.WAL.Dir); len(files) == 0 {
		t.Fatal("WAL empty")
	}
}

// TestReleaseStepOutOfTimeLetsTheDrainGoOn holds the offset commit of the
// drain's rotation past the release step's time, as a broker slow to
// answer or a machine too busy does: the drain goes on (Run returns no
// error), the rotation's files stay ready for the next start's recovery,
// and nothing was committed. Before, the consumer exited with the timed-out
// commit as its error.
func TestReleaseStepOutOfTimeLetsTheDrainGoOn(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.cfg.Ingestion.WAL.MaxFileAgeMinutes = 10 // nothing rotates before the drain
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 30)
	waitFor(t, "records consumed", 20*time.Second, func() bool { return e.consumed() == 30 })
	wake := make(chan struct{})
	var woken sync.Once
	release := func() { woken.Do(func() { close(wake) }) }
	t.Cleanup(release) // before the consumer's cleanup
	e.cluster.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		e.cluster.SleepControl(func() { <-wake })
		return nil, nil, false
	})
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			t.Errorf("Run returned %v, want the drain to go on past an offset commit out of time", err)
		}
		e.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of the drain")
	}
	if got := e.committed(t); got != 0 {
		t.Errorf("offsets committed: %d, want none", got)
	}
	if len(readyFiles(t, e.cfg.Ingestion.WAL.Dir)) == 0 {
		t.Error("no ready file left for recovery")
	}
	if !strings.Contains(logs.String(), "offsets not committed within the release step's time") {
		t.Errorf("no warning about the offsets left uncommitted; log:\n%s", logs.String())
	}
	// The held commit answered, the client that Run left closing in
	// the background ends; the package's leak check wants it gone.
	release()
	waitFor(t, "the consumer's Kafka client to close", 30*time.Second, func() bool {
		buf := make([]byte, 4<<20)
		return !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("github.com/twmb/franz-go/pkg/kgo.("))
	})
}
