package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
)

// TestTopicRecreatedUnderTheIngestor deletes a dataset's topic under a
// running `ingestor run` and creates it again, through the Kafka admin
// protocol, then writes new events to it. The consumer sees the new topic
// id, says so once, and is restarted; it reads the new topic from its
// start: the table holds the events of both topics exactly once, the log
// holds no flood of fetch warnings, and SIGTERM stops the instance.
func TestTopicRecreatedUnderTheIngestor(t *testing.T) {
	const topic, partitions = "recreated", 4
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: partitions})
	d := datasetOf(topic)
	in := w.newInstance("recreated", instanceOptions{datasets: []dataset{d}})
	defer in.dumpLogs()
	defer func() {
		if t.Failed() {
			t.Logf("consumer lines of the run:\n%s", linesWith(in.log("run"), "watchdog", "role exited", "role started", "recreated", "new ID", "partitions", "draining", "released"))
		}
	}()
	ctx := context.Background()
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 20 * time.Second) }
	const old, fresh = 3000, 2000
	if err := w.produce(ctx, topic, 0, old, 0, at); err != nil {
		t.Fatal(err)
	}
	in.start("run")
	w.waitRows(t, map[string]int64{d.table: old}, 90*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// The new topic's events are numbered after the old one's.
	if err := w.produce(ctx, topic, old, fresh, 0, at); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{d.table: old + fresh}, 120*time.Second)
	in.stop(t, 90*time.Second)

	missing, dup, unexpected, rows := w.exactlyOnce(t, d.table, 0, old+fresh)
	if missing+dup+unexpected > 0 {
		t.Errorf("%s after its topic was recreated: %d rows, %d events missing, %d duplicated, %d unexpected", d.table, rows, missing, dup, unexpected)
	}
	log := in.log("run")
	if n := strings.Count(log, `"reason":"topic_recreated"`); n != 1 {
		t.Errorf("%d lines about the recreated topic, want 1", n)
	}
	// Fetch errors are logged once a second at most.
	if n := strings.Count(log, `"msg":"fetch"`); n > 30 {
		t.Errorf("%d fetch warnings: a flood", n)
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	t.Logf("topic %s recreated under the ingestor: %d + %d events exactly once, %d log lines", topic, old, fresh, strings.Count(log, "\n"))
}

// TestTopicRecreatedWithReadyFilesWaiting recreates the topic while the
// old topic's rotated files still wait in the WAL: the consumer runs
// alone, without the uploader and the committer, so none of them is in
// the table yet. The consumer exits on the new topic id; its next start
// dies at consumer.before-topic-record, after its recovery and before it
// records the new id; the start after that reads the new topic, and only
// then do the uploader and the committer run. The old topic's files are
// committed data of it, whatever the new topic's (empty) commits say: the
// table holds the events of both topics exactly once.
func TestTopicRecreatedWithReadyFilesWaiting(t *testing.T) {
	const topic, partitions = "recreatedwait", 4
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: partitions})
	d := datasetOf(topic)
	in := w.newInstance("recreatedwait", instanceOptions{datasets: []dataset{d}})
	defer in.dumpLogs()
	ctx := context.Background()
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 20 * time.Second) }
	const old, fresh = 3000, 2000
	if err := w.produce(ctx, topic, 0, old, 0, at); err != nil {
		t.Fatal(err)
	}
	first := in.start("consumer")
	// Every old event is in a ready file, its offsets committed.
	deadline := time.Now().Add(90 * time.Second)
	for readyRecords(t, in.walDir, topic) < old {
		if time.Now().After(deadline) || !first.running() {
			t.Fatalf("%d of %d old events in ready files", readyRecords(t, in.walDir, topic), old)
		}
		time.Sleep(200 * time.Millisecond)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := w.produce(ctx, topic, old, fresh, 0, at); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the consumer did not stop on the recreated topic within 60 s")
	}
	if n := readyRecords(t, in.walDir, topic); n != old {
		t.Fatalf("%d events in ready files once the consumer stopped, want the %d of the old topic", n, old)
	}

	env := in.env
	in.env = append(env, failpoint.EnvVar+"="+failpoint.ConsumerBeforeTopicRecord+"=1@"+filepath.Join(in.dir, "fp.marker"))
	crashed := in.start("consumer")
	if code := crashed.exitCode(); code != failpoint.ExitCode {
		t.Fatalf("consumer exited with %d, want the failpoint's %d", code, failpoint.ExitCode)
	}
	in.env = env
	in.start("consumer")
	in.start("uploader")
	in.start("committer")
	w.waitRows(t, map[string]int64{d.table: old + fresh}, 120*time.Second)
	in.stop(t, 90*time.Second)

	missing, dup, unexpected, rows := w.exactlyOnce(t, d.table, 0, old+fresh)
	if missing+dup+unexpected > 0 {
		t.Errorf("%s after its topic was recreated with ready files waiting: %d rows, %d events missing, %d duplicated, %d unexpected", d.table, rows, missing, dup, unexpected)
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	t.Logf("topic %s recreated with %d events in ready files: %d + %d events exactly once", topic, old, old, fresh)
}

// readyRecords counts the offsets the topic's ready files reach, summed
// over its partitions: the files of one partition's rotation cut its
// offsets by table partition, so their ranges overlap.
func readyRecords(t *testing.T, dir, topic string) int64 {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	reach := map[int32]int64{}
	for _, f := range files {
		if f.State == walfile.Ready && f.Topic == topic {
			reach[f.Partition] = max(reach[f.Partition], f.End+1)
		}
	}
	var n int64
	for _, r := range reach {
		n += r
	}
	return n
}

// linesWith returns the lines of log that hold any of the words.
func linesWith(log string, words ...string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
