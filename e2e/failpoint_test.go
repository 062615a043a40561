package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
	"github.com/icewal/ingestor/supervisor"
)

// TestFailpoints crashes `ingestor run` at each failpoint in turn and checks
// that every event still lands in the tables exactly once.
//
// Each failpoint gets its own instance (WAL directory, two datasets, two
// tables, two topics) in one shared world. The instance's processes get
// INGESTOR_FAILPOINTS=<name>=1@<marker>: the supervisor's children inherit
// it, the first child to reach the point creates the marker and exits with
// code 77, and the child the supervisor starts again finds the marker and
// runs without the point armed. So each point fires exactly once per
// instance, and the marker proves it fired. consumer.during-recovery needs
// something for recovery to delete, so consumer.after-rename is armed with
// it (with its own marker); consumer.generation-lost needs a consumer
// frozen past its session (frozen_test.go).
func TestFailpoints(t *testing.T) {
	// committer.after-delete-files is reached by upsert datasets only:
	// TestUpserts crashes it. pause.after-record is reached by a pause
	// request only:
	// TestPauseCrashAfterTheRecord crashes it; committer.after-hand-back
	// by an object gone before its append only:
	// TestOutageLongerThanOrphanMargin crashes it.
	var names []string
	for _, n := range failpoint.Names() {
		if n != failpoint.PauseAfterRecord && n != failpoint.CommitterAfterHandBack && n != failpoint.CommitterAfterDeleteFiles {
			names = append(names, n)
		}
	}
	var topics []string
	for i := range names {
		topics = append(topics, fmt.Sprintf("fp%da", i), fmt.Sprintf("fp%db", i))
	}
	w := newWorld(t, worldOptions{topics: topics, partitions: 4})
	start := time.Now()
	// The instances run failpointsAtOnce at a time: most of a point's time
	// is spent waiting on commit intervals and restart delays, not on the
	// CPU. Each subtest has its own instance, topics and tables, so they
	// do not see each other's events; the deadlines below are generous
	// because the machine may be loaded, and a wait ends as soon as its
	// condition holds.
	const failpointsAtOnce = 4
	var ran, hit atomic.Int32
	t.Run("each", func(t *testing.T) {
		sem := make(chan struct{}, failpointsAtOnce)
		var wg sync.WaitGroup
		for i, name := range names {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t.Run(name, func(t *testing.T) { runFailpoint(t, w, i, name, topics, &hit) })
				ran.Add(1)
			}()
		}
		wg.Wait()
	})
	t.Logf("failpoints hit: %d of %d run (%d defined); every event exactly once after each (%s)",
		hit.Load(), ran.Load(), len(names), time.Since(start).Round(time.Second))
	if hit.Load() != ran.Load() {
		t.Errorf("only %d of %d failpoints were hit", hit.Load(), ran.Load())
	}
}

// runFailpoint is the subtest of the failpoint name, the i-th, in the
// shared world w; it counts the point in hit once its marker shows.
func runFailpoint(t *testing.T, w *world, i int, name string, topics []string, hit *atomic.Int32) {
	const before, during = 1500, 1000
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 20 * time.Second) }
	ctx := context.Background()
	ds := []dataset{datasetOf(topics[2*i]), datasetOf(topics[2*i+1])}
	marker := filepath.Join(w.dir, "fired-"+name)
	spec := name + "=1@" + marker
	if name == failpoint.ConsumerDuringRecovery {
		spec += "," + failpoint.ConsumerAfterRename + "=1@" + marker + ".after-rename"
	}
	// A short stall timeout lets the consumer's watchdog mend, within
	// the wait below, a group that keeps a dead member's partitions
	// after two crashes in a row.
	o := instanceOptions{datasets: ds, env: []string{failpoint.EnvVar + "=" + spec}, stallTimeoutSeconds: 10}
	// The maintainer's own points need it busy, and the crash
	// right after an append is the one that must survive upkeep.
	switch name {
	case failpoint.MaintainerAfterExpire, failpoint.MaintainerAfterManifest, failpoint.CommitterAfterAppend:
		o.upkeep = true
	case failpoint.MaintainerAfterCompact, failpoint.CommitterAfterReplace:
		o.upkeep, o.compactionFanIn = true, 2 // a merge at every pass
	case failpoint.ConsumerAfterRoll:
		// Segments roll alone only at the size limit while their
		// partition's window is still open: small files, a long age.
		o.maxFileSizeBytes, o.maxFileAgeMinutes = 2<<10, 0.2
	}
	in := w.newInstanceFor(t, "fp-"+name, o)
	defer in.dumpLogs()
	badName := walfile.ReadyPrefix + ds[0].topic + "_0_0-9_not-a-uuid.parquet"
	for _, d := range ds {
		if err := w.produce(ctx, d.topic, 0, before, 0, at); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	in.start("run")
	if name == failpoint.QuarantineBeforeNote {
		// The quarantine's point needs a file to quarantine: a
		// ready name that does not parse, which the running
		// uploader moves aside within 10 s.
		deadline := time.Now().Add(120 * time.Second)
		for strings.Count(in.log("run"), `"msg":"role started"`) < len(supervisor.Roles(in.cfg)) {
			if time.Now().After(deadline) {
				t.Fatal("the roles did not start within 120 s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := os.WriteFile(filepath.Join(in.walDir, badName), []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// More events while it runs, so that work goes on after the
	// crash and the restart. The upkeep points need several
	// appends per table (a manifest rewrite waits for a second
	// manifest), so there the events come over seconds, not in
	// one commit interval.
	rate := 2000
	if o.upkeep {
		rate = 200
	}
	// Only a consumer that wakes up outside its group reaches
	// consumer.generation-lost: it is frozen (SIGSTOP, SIGCONT)
	// while the events come, over 20 s.
	frozen := name == failpoint.ConsumerGenerationLost
	if frozen {
		rate = during / 20
	}
	produced := make(chan error, 1)
	go func() {
		for _, d := range ds {
			if err := w.produce(ctx, d.topic, before, during, rate, at); err != nil {
				produced <- err
				return
			}
		}
		produced <- nil
	}()
	if frozen {
		in.freezeUntil(t, func() bool { _, err := os.Stat(marker); return err == nil })
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(180 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failpoint %s was not hit within 180 s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	hit.Add(1)
	// The supervisor starts the crashed role again (after its
	// restart delay); only then is an orderly stop a full one. A role
	// that reaches its point during start-up (the consumer's topic
	// record) can die before its handshake: that start is logged as a
	// failed "start role", not as "role started", and counts as one.
	starts := func() int {
		l := in.log("run")
		return strings.Count(l, `"msg":"role started"`) + strings.Count(l, `"msg":"start role"`)
	}
	deadline = time.Now().Add(120 * time.Second)
	for starts() < len(supervisor.Roles(in.cfg))+1 {
		if time.Now().After(deadline) {
			t.Fatal("the crashed role was not started again within 120 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := map[string]int64{}
	for _, d := range ds {
		want[d.table] = before + during
	}
	w.waitRows(t, want, 300*time.Second)
	in.stop(t, 180*time.Second)

	log := in.log("run")
	if !strings.Contains(log, "failpoint "+name+" hit (1): exiting with code 77") {
		t.Errorf("the supervisor's log does not show the failpoint's line")
	}
	if !strings.Contains(log, "exit status 77") {
		t.Errorf("the supervisor's log does not show a child exiting with code 77")
	}
	for _, d := range ds {
		missing, dup, unexpected, rows := w.exactlyOnce(t, d.table, 0, before+during)
		if missing+dup+unexpected > 0 {
			t.Errorf("%s after a crash at %s: %d rows, %d events missing, %d duplicated, %d unexpected",
				d.table, name, rows, missing, dup, unexpected)
		}
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	if name == failpoint.QuarantineBeforeNote {
		// The crash came between the move and the note; the
		// restarted uploader wrote the note.
		notes, err := walfile.ListQuarantine(in.walDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) != 1 || notes[0].File != badName || notes[0].Reason != walfile.ReasonBadName {
			t.Errorf("quarantine after the crash: %+v, want %s noted as %s", notes, badName, walfile.ReasonBadName)
		}
		if !strings.Contains(in.log("run"), "quarantined file had no note") {
			t.Errorf("the restart did not log the note it wrote")
		}
	}
	t.Logf("failpoint %s: hit, crashed with code 77, restarted; %d events in each of 2 tables exactly once (%s)",
		name, before+during, time.Since(began).Round(100*time.Millisecond))
}
