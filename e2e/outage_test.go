package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/walfile"
)

// outageFor is how long each of Azure Blob and the catalog stays down: a
// minute, longer than every retry and backoff step but the uploader's
// last (which caps at a minute).
const outageFor = 60 * time.Second

// TestOutages runs `ingestor run` against a PostgreSQL catalog while, in
// turn, Azure Blob (Azurite) is down, the catalog (PostgreSQL) is down and
// the broker is gone. During the first two the consumer keeps writing the
// WAL; afterwards uploads and commits resume; the waiting shows in the
// failure counters and the logs; and every event ends in the table exactly
// once.
func TestOutages(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{"outage"}, partitions: 4, postgres: true, restartableKafka: true})
	in := w.newInstance("o", instanceOptions{datasets: []dataset{datasetOf("outage")}})
	defer in.dumpLogs()
	const table = "crash.outage"
	ctx := context.Background()
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 30 * time.Second) }
	var next int64
	// produceDuring sends events at 400/s for d in the background; wait
	// returns once they are all acknowledged.
	produceDuring := func(d time.Duration) (wait func()) {
		n := int64(400 * d.Seconds())
		first := next
		next += n
		done := make(chan error, 1)
		go func() { done <- w.produce(ctx, "outage", first, n, 400, at) }()
		return func() {
			if err := <-done; err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	scrape := func(role string) devenv.Samples {
		s, err := devenv.Scrape(ctx, in.metrics[role])
		if err != nil {
			t.Fatalf("scrape %s: %v", role, err)
		}
		return s
	}
	metric := func(role, name string) float64 { return scrape(role).Sum(name, `dataset="outage"`) }
	// readyFiles counts the WAL's ready files and those with a marker.
	readyFiles := func() (ready, uploaded int) {
		files, err := walfile.List(in.walDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			switch f.State {
			case walfile.Ready:
				ready++
			case walfile.Uploaded:
				uploaded++
			}
		}
		return ready, uploaded
	}

	in.start("run")
	wait := produceDuring(5 * time.Second)
	wait()
	w.waitRows(t, map[string]int64{table: next}, 60*time.Second)

	// Azure Blob down: uploads fail and so do commits (the table's
	// metadata lives in the same storage); the consumer goes on.
	t.Run("azure blob down", func(t *testing.T) {
		uploadFails := metric("uploader", "ingestor_uploader_upload_failures_total")
		commitFails := metric("committer", "ingestor_committer_commit_failures_total")
		rows := metric("consumer", "ingestor_consumer_rows_written_total")
		wait := produceDuring(outageFor + 5*time.Second)
		time.Sleep(2 * time.Second)
		if err := w.az.Stop(); err != nil {
			t.Fatal(err)
		}
		down := time.Now()
		time.Sleep(outageFor)
		readyDown, uploadedDown := readyFiles()
		rowsDown := metric("consumer", "ingestor_consumer_rows_written_total")
		uf := metric("uploader", "ingestor_uploader_upload_failures_total") - uploadFails
		cf := metric("committer", "ingestor_committer_commit_failures_total") - commitFails
		if err := w.az.Start(ctx); err != nil {
			t.Fatal(err)
		}
		wait()
		w.waitRows(t, map[string]int64{table: next}, 150*time.Second)
		t.Logf("azure down %s: consumer wrote %.0f rows meanwhile, %d ready files waited (%d with markers); %.0f upload failures, %.0f commit failures; caught up %s after it came back",
			outageFor, rowsDown-rows, readyDown, uploadedDown, uf, cf, time.Since(down)-outageFor)
		if rowsDown-rows < 400*float64(outageFor/time.Second)/2 {
			t.Errorf("the consumer wrote only %.0f rows to the WAL while storage was down", rowsDown-rows)
		}
		if readyDown-uploadedDown < 3 {
			t.Errorf("only %d ready files without a marker waited during the outage", readyDown-uploadedDown)
		}
		// Commits fail only for files uploaded before storage went down
		// and not yet committed; uploads fail for every file.
		if uf == 0 {
			t.Error("the upload failure counter did not move")
		}
		if log := in.log("run"); !strings.Contains(log, "upload failed; the file stays") {
			t.Error("no log line tells that uploads fail")
		}
	})

	// The catalog down: commits fail; the consumer writes the WAL and
	// the uploader, which knows where the table's data goes, uploads.
	t.Run("catalog down", func(t *testing.T) {
		commitFails := metric("committer", "ingestor_committer_commit_failures_total")
		rows := metric("consumer", "ingestor_consumer_rows_written_total")
		uploaded := metric("uploader", "ingestor_uploader_files_uploaded_total")
		wait := produceDuring(outageFor + 5*time.Second)
		time.Sleep(2 * time.Second)
		if err := w.pg.Stop(); err != nil {
			t.Fatal(err)
		}
		down := time.Now()
		time.Sleep(outageFor)
		readyDown, uploadedDown := readyFiles()
		rowsDown := metric("consumer", "ingestor_consumer_rows_written_total")
		up := metric("uploader", "ingestor_uploader_files_uploaded_total") - uploaded
		cf := metric("committer", "ingestor_committer_commit_failures_total") - commitFails
		if err := w.pg.Start(ctx); err != nil {
			t.Fatal(err)
		}
		wait()
		w.waitRows(t, map[string]int64{table: next}, 150*time.Second)
		t.Logf("catalog down %s: consumer wrote %.0f rows, uploader stored %.0f files meanwhile; %d ready files waited (%d with markers); %.0f commit failures; caught up %s after it came back",
			outageFor, rowsDown-rows, up, readyDown, uploadedDown, cf, time.Since(down)-outageFor)
		if rowsDown-rows < 400*float64(outageFor/time.Second)/2 {
			t.Errorf("the consumer wrote only %.0f rows to the WAL while the catalog was down", rowsDown-rows)
		}
		if up == 0 || uploadedDown < 3 {
			t.Errorf("uploads stopped with the catalog: %.0f uploaded, %d markers waiting", up, uploadedDown)
		}
		if cf == 0 {
			t.Error("the commit failure counter did not move")
		}
		if got := strings.Count(in.log("run"), `"level":"ERROR","msg":"load table","role":"committer"`) +
			strings.Count(in.log("run"), `"level":"ERROR","msg":"open catalog","role":"committer"`); got == 0 {
			t.Error("no committer log line tells that the catalog cannot be reached")
		}
	})

	// The broker gone: nothing new arrives, the offset commit of the
	// segments open at that moment fails, and the consumer waits (exits,
	// is restarted, and does not start while it cannot read the committed
	// offsets) until the broker is back; then it resumes from the
	// committed offsets.
	t.Run("broker gone", func(t *testing.T) {
		wait := produceDuring(2 * time.Second)
		wait()
		time.Sleep(500 * time.Millisecond) // rows sit in open segments
		before := strings.Count(in.log("run"), `"msg":"role exited"`)
		w.restartKafka(outageFor / 2)
		back := time.Now()
		wait = produceDuring(5 * time.Second)
		wait()
		w.waitRows(t, map[string]int64{table: next}, 120*time.Second)
		exits := strings.Count(in.log("run"), `"msg":"role exited"`) - before
		if !strings.Contains(in.log("run"), "unable to open connection to broker") {
			t.Error("no log line tells that the broker cannot be reached")
		}
		t.Logf("broker gone %s: %d role exits and restarts while it was away; caught up %s after it came back",
			outageFor/2, exits, time.Since(back).Round(100*time.Millisecond))
	})

	in.stop(t, 90*time.Second)
	missing, dup, unexpected, rows := w.exactlyOnce(t, table, 0, next)
	if missing+dup+unexpected > 0 {
		t.Fatalf("after the outages: %d rows, %d events missing, %d duplicated, %d unexpected", rows, missing, dup, unexpected)
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	t.Logf("outages: %d events, each in the table exactly once", next)
}
