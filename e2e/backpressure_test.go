package e2e

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
)

// TestBackpressureOnASmallVolume runs the ingestor on a 16 MiB tmpfs WAL
// volume and takes Azure Blob away in the middle of a stream: consumption
// pauses at the high watermark before the volume fills, nothing is
// dropped, and once storage returns the ready files drain, consumption
// resumes and every event lands exactly once.
func TestBackpressureOnASmallVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts a tmpfs and must run as root (CI does)")
	}
	o := clicksOptions()
	o.diskHighWatermarkPct = 30
	w := newWorld(t, worldOptions{topics: []string{clicksTopic}, partitions: 4})
	in := w.newInstance("bp", o)
	defer in.dumpLogs()
	if err := os.MkdirAll(in.walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", in.walDir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", in.walDir).Run() })

	p := in.start("run")
	good, _ := w.produceMixed(t, clicksTopic, 0, 2000, 0)
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, time.Minute)

	ctx := context.Background()
	if err := w.az.Stop(); err != nil {
		t.Fatal(err)
	}
	g, err := w.generator(clicksTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Rate = 25000
	g.Time = eventTime
	const events = 200000
	genDone := make(chan error, 1)
	go func() { genDone <- g.Run(ctx, 2000, events) }()

	consumer := func() devenv.Samples { return in.peek("consumer") }
	var peakUsed float64
	deadline := time.Now().Add(2 * time.Minute)
	for consumer().Sum("ingestor_consumer_paused") != 1 {
		if u := consumer().Sum("ingestor_consumer_wal_volume_used_ratio"); u > peakUsed {
			peakUsed = u
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumption never paused; volume use %.2f", peakUsed)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := <-genDone; err != nil {
		t.Fatal(err)
	}
	// Paused: the rest of the stream waits in Kafka, not on the volume.
	time.Sleep(3 * time.Second)
	c1 := consumer().Sum("ingestor_consumer_records_total")
	time.Sleep(3 * time.Second)
	c2 := consumer().Sum("ingestor_consumer_records_total")
	if c2 != c1 || c2 >= events+2000 {
		t.Fatalf("while paused the consumer went from %v to %v records of %d", c1, c2, events+2000)
	}
	if u := consumer().Sum("ingestor_consumer_wal_volume_used_ratio"); u > peakUsed {
		peakUsed = u
	}
	var st syscall.Statfs_t
	syscall.Statfs(in.walDir, &st)
	if restarts := in.peek("supervisor").Sum("ingestor_supervisor_role_restarts_total"); restarts != 0 {
		t.Fatalf("%v role restarts while the volume filled (a full disk crashed a role)", restarts)
	}
	uploadFailures := in.peek("uploader").Sum("ingestor_uploader_upload_failures_total")
	if uploadFailures == 0 {
		t.Fatal("no upload failure counted while Azure Blob was down")
	}

	// Storage returns: ready files drain, consumption resumes, all lands.
	outage := time.Now()
	if err := w.az.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{clicksTable: events + 2000}, 4*time.Minute)
	recovered := time.Since(outage)
	if consumer().Sum("ingestor_consumer_paused") != 0 {
		t.Fatal("still paused after every event landed")
	}
	pausedFor := consumer().Sum("ingestor_consumer_paused_seconds_total")
	p.signal(syscall.SIGTERM)
	p.wait(t, 96*time.Second)
	var all []int64
	for seq := int64(0); seq < events+2000; seq++ {
		all = append(all, seq)
	}
	w.checkTable(t, clicksTable, all)
	t.Logf("e2e: backpressure on a 16 MiB tmpfs, watermark 30%%: paused with %.0f of %d events consumed, peak volume use %.0f%%, %.0f upload failures while storage was down, paused %.0f s, all landed %s after storage returned",
		c2, events+2000, peakUsed*100, uploadFailures, pausedFor, recovered.Round(time.Second))
}
