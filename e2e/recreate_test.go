package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
