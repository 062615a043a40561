package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/pause"
)

// TestPauseAndResume is what an operator does during a catalog
// migration, with the built binary against a running ingestor (kfake,
// Azurite, SQLite): `ingestor pause` one dataset; its new events stop
// arriving while the other dataset's keep arriving, and the rows it had
// already read still reach its table (rotated by age, uploaded,
// committed); the pause holds across a crash of the consumer and a
// restart of the whole process tree; `ingestor status` shows who paused
// it, why and since when; `ingestor resume` lets everything arrive, each
// event exactly once.
func TestPauseAndResume(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{"held", "flowing"}, partitions: 2})
	// Segments rotate by age after 6 s, so rows read before the pause are
	// still in open segments when it lands.
	in := w.newInstance("pause", instanceOptions{
		datasets:          []dataset{datasetOf("held"), datasetOf("flowing")},
		maxFileAgeMinutes: 0.1,
	})
	defer in.dumpLogs()
	ctx := context.Background()
	consumer, consumed, cli, waitFor := pauseHelpers(t, in)
	in.start("run")
	in.waitReady(t, time.Minute)
	if err := w.produce(ctx, "held", 0, 500, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	if err := w.produce(ctx, "flowing", 0, 500, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	waitFor("held's first 500 events read", time.Minute, func() bool { return consumed("held") == 500 })
	if rows := w.tableRows(ctx, "crash.held"); rows >= 500 {
		t.Fatalf("crash.held already holds %d rows: the rows read before the pause must still be in open segments", rows)
	}

	code, out := cli("pause", "--dataset", "held", "--reason", "catalog migration")
	if code != 0 || !strings.Contains(out, "paused held") || !strings.Contains(out, "the consumer applied it") {
		t.Fatalf("ingestor pause: exit %d\n%s", code, out)
	}
	pausedAt := time.Now()
	// A fetch already in flight when the pause landed ends within
	// kgo.FetchMaxWait (500 ms); what is produced after that stays in Kafka.
	time.Sleep(1500 * time.Millisecond)
	if err := w.produce(ctx, "held", 500, 1000, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	if err := w.produce(ctx, "flowing", 500, 1000, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	// The other dataset flows, and the paused one's rows read before the
	// pause are committed by the age rotation.
	w.waitRows(t, map[string]int64{"crash.flowing": 1500, "crash.held": 500}, 2*time.Minute)
	time.Sleep(2 * time.Second)
	if got := consumed("held"); got != 500 {
		t.Fatalf("paused dataset read %v records, want the 500 read before the pause", got)
	}
	if rows := w.tableRows(ctx, "crash.held"); rows != 500 {
		t.Fatalf("crash.held holds %d rows while paused, want 500", rows)
	}
	s := consumer()
	if s.Sum("ingestor_consumer_paused", `dataset="held"`, `reason="operator"`) != 1 ||
		s.Sum("ingestor_consumer_paused", `dataset="held"`, `reason="disk"`) != 0 ||
		s.Sum("ingestor_consumer_paused", `dataset="flowing"`) != 0 {
		t.Fatalf("ingestor_consumer_paused: held operator %v disk %v, flowing %v; want 1, 0, 0",
			s.Sum("ingestor_consumer_paused", `dataset="held"`, `reason="operator"`),
			s.Sum("ingestor_consumer_paused", `dataset="held"`, `reason="disk"`), s.Sum("ingestor_consumer_paused", `dataset="flowing"`))
	}
	if s.Sum("ingestor_consumer_partitions_assigned", `dataset="held"`) != 2 {
		t.Fatal("the paused dataset's partitions left the consumer: a pause must not rebalance")
	}
	checkStatus := func() {
		t.Helper()
		code, out := cli("status", "--output", "json")
		if code != 0 {
			t.Fatalf("ingestor status: exit %d\n%s", code, out)
		}
		var r struct {
			Datasets []struct {
				Name          string
				Paused        *bool
				PausedReasons []string `json:"paused_reasons"`
				OperatorPause *struct {
					By     string
					Reason string
					Since  time.Time
				} `json:"operator_pause"`
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("status json: %v\n%s", err, out)
		}
		for _, d := range r.Datasets {
			switch d.Name {
			case "held":
				p := d.OperatorPause
				if p == nil || p.Reason != "catalog migration" || !strings.Contains(p.By, "uid ") ||
					p.Since.Before(pausedAt.Add(-time.Minute)) || p.Since.After(pausedAt) ||
					d.Paused == nil || !*d.Paused || strings.Join(d.PausedReasons, ",") != "operator" {
					t.Fatalf("status of held = %+v (pause %+v), want paused by an operator with who, why and since when", d, p)
				}
			case "flowing":
				if d.OperatorPause != nil || d.Paused == nil || *d.Paused {
					t.Fatalf("status of flowing = %+v, want running", d)
				}
			}
		}
		code, out = cli("status")
		if code != 0 || !strings.Contains(out, "paused YES (operator)") || !strings.Contains(out, "): catalog migration; ingestor resume lifts it") {
			t.Fatalf("ingestor status text: exit %d\n%s", code, out)
		}
	}
	checkStatus()
	if log := in.log("run"); !strings.Contains(log, `"msg":"dataset paused by an operator"`) || !strings.Contains(log, `"msg":"dataset consumption paused"`) {
		t.Fatal("the supervisor's and the consumer's logs do not tell of the pause")
	}

	// The consumer crashes: the supervisor starts a new one, which stays
	// paused.
	var consumerPID int
	for _, c := range childPIDs(in.proc("run").cmd.Process.Pid) {
		if roleOf(c) == "consumer" {
			consumerPID = c
		}
	}
	if consumerPID == 0 {
		t.Fatal("no consumer child found")
	}
	if err := syscall.Kill(consumerPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor("a new consumer reading flowing", time.Minute, func() bool {
		return consumer().Sum("ingestor_consumer_partitions_assigned", `dataset="flowing"`) == 2
	})
	if err := w.produce(ctx, "flowing", 1500, 200, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{"crash.flowing": 1700}, 2*time.Minute)
	if got := consumed("held"); got != 0 {
		t.Fatalf("after a consumer crash the paused dataset read %v records", got)
	}

	// The whole tree restarts: still paused.
	in.stop(t, 90*time.Second)
	in.start("run")
	in.waitReady(t, time.Minute)
	if err := w.produce(ctx, "flowing", 1700, 300, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{"crash.flowing": 2000}, 2*time.Minute)
	time.Sleep(2 * time.Second)
	if got := consumed("held"); got != 0 {
		t.Fatalf("after a restart the paused dataset read %v records", got)
	}
	if rows := w.tableRows(ctx, "crash.held"); rows != 500 {
		t.Fatalf("crash.held holds %d rows after the restart, want 500", rows)
	}
	checkStatus()

	code, out = cli("resume", "--dataset", "held")
	if code != 0 || !strings.Contains(out, "resumed held") || !strings.Contains(out, "the consumer applied it") {
		t.Fatalf("ingestor resume: exit %d\n%s", code, out)
	}
	w.waitRows(t, map[string]int64{"crash.held": 1500, "crash.flowing": 2000}, 2*time.Minute)
	in.stop(t, 90*time.Second)
	for name, n := range map[string]int64{"crash.held": 1500, "crash.flowing": 2000} {
		if missing, dup, unexpected, rows := w.exactlyOnce(t, name, 0, n); missing+dup+unexpected != 0 || rows != n {
			t.Errorf("%s: %d missing, %d duplicated, %d unexpected, %d rows; want each of %d events once", name, missing, dup, unexpected, rows, n)
		}
	}
	t.Logf("e2e: pause held %s, through a consumer crash and a restart of the tree; flowing kept flowing; %d + %d events landed exactly once after the resume",
		time.Since(pausedAt).Round(time.Second), 1500, 2000)
}

// TestPauseAndResumeSidecars: in the sidecar layout (the roles started
// apart, no supervisor) `ingestor pause` reaches the consumer itself, and
// the pause holds across the consumer's restart.
func TestPauseAndResumeSidecars(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{"held", "flowing"}, partitions: 2})
	in := w.newInstance("sidecars", instanceOptions{datasets: []dataset{datasetOf("held"), datasetOf("flowing")}})
	defer in.dumpLogs()
	ctx := context.Background()
	_, consumed, cli, waitFor := pauseHelpers(t, in)
	for _, r := range []string{"consumer", "uploader", "committer"} {
		in.start(r)
	}
	in.waitReady(t, time.Minute)
	waitFor("partitions assigned", time.Minute, func() bool {
		s, err := devenv.Scrape(ctx, in.metrics["consumer"])
		return err == nil && s.Sum("ingestor_consumer_partitions_assigned") == 4
	})

	code, out := cli("pause", "--dataset", "held", "--reason", "incident 42")
	if code != 0 || !strings.Contains(out, "paused held") || !strings.Contains(out, "the consumer applied it") {
		t.Fatalf("ingestor pause: exit %d\n%s", code, out)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := w.produce(ctx, "held", 0, 500, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	if err := w.produce(ctx, "flowing", 0, 500, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{"crash.flowing": 500}, 2*time.Minute)
	if got := consumed("held"); got != 0 {
		t.Fatalf("paused dataset read %v records", got)
	}

	// The consumer restarts alone: still paused.
	p := in.proc("consumer")
	p.cmd.Process.Signal(syscall.SIGTERM)
	in.awaitExit(t, []*xproc{p}, 90*time.Second)
	in.start("consumer")
	in.waitReady(t, time.Minute)
	if err := w.produce(ctx, "flowing", 500, 500, 0, eventTime); err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{"crash.flowing": 1000}, 2*time.Minute)
	if got := consumed("held"); got != 0 {
		t.Fatalf("after the consumer's restart the paused dataset read %v records", got)
	}

	code, out = cli("resume")
	if code != 0 || !strings.Contains(out, "resumed held") || !strings.Contains(out, "the consumer applied it") {
		t.Fatalf("ingestor resume: exit %d\n%s", code, out)
	}
	w.waitRows(t, map[string]int64{"crash.held": 500, "crash.flowing": 1000}, 2*time.Minute)
	in.stop(t, 90*time.Second)
	for name, n := range map[string]int64{"crash.held": 500, "crash.flowing": 1000} {
		if missing, dup, unexpected, rows := w.exactlyOnce(t, name, 0, n); missing+dup+unexpected != 0 || rows != n {
			t.Errorf("%s: %d missing, %d duplicated, %d unexpected, %d rows; want each of %d events once", name, missing, dup, unexpected, rows, n)
		}
	}
}

// pauseHelpers returns what the pause tests ask of an instance: its
// consumer's metrics, the records a dataset's consumer read, an ingestor
// command run with the instance's config (exit code and output), and a
// wait for a condition.
func pauseHelpers(t *testing.T, in *instance) (func() devenv.Samples, func(string) float64, func(...string) (int, string), func(string, time.Duration, func() bool)) {
	ctx := context.Background()
	consumer := func() devenv.Samples {
		s, err := devenv.Scrape(ctx, in.metrics["consumer"])
		if err != nil {
			return devenv.Samples{}
		}
		return s
	}
	consumed := func(ds string) float64 {
		return consumer().Sum("ingestor_consumer_records_total", `dataset="`+ds+`"`)
	}
	cli := func(args ...string) (int, string) {
		t.Helper()
		out, err := exec.Command(binary, append(args, "--config", in.cfgPath)...).CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("ingestor %v: %v", args, err)
		}
		code := 0
		if ee != nil {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, limit)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	return consumer, consumed, cli, waitFor
}

// TestPauseCrashAfterTheRecord crashes `ingestor run` at
// pause.after-record: the pause is recorded, the consumer was not told,
// and the whole tree is gone. The tree started again keeps the dataset
// paused, a second pause is harmless, and after the resume every event
// lands exactly once.
func TestPauseCrashAfterTheRecord(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{"held", "flowing"}, partitions: 2})
	marker := filepath.Join(w.dir, "fired-"+failpoint.PauseAfterRecord)
	in := w.newInstance("pausecrash", instanceOptions{
		datasets: []dataset{datasetOf("held"), datasetOf("flowing")},
		env:      []string{failpoint.EnvVar + "=" + failpoint.PauseAfterRecord + "=1@" + marker},
	})
	defer in.dumpLogs()
	ctx := context.Background()
	_, consumed, cli, _ := pauseHelpers(t, in)
	in.start("run")
	in.waitReady(t, time.Minute)
	for _, topic := range []string{"held", "flowing"} {
		if err := w.produce(ctx, topic, 0, 300, 0, eventTime); err != nil {
			t.Fatal(err)
		}
	}
	w.waitRows(t, map[string]int64{"crash.held": 300, "crash.flowing": 300}, 2*time.Minute)

	code, out := cli("pause", "--dataset", "held", "--reason", "crash test")
	if code != exitErrorCode || !strings.Contains(out, "asking again is harmless") {
		t.Fatalf("pause through a crashing supervisor: exit %d, want %d\n%s", code, exitErrorCode, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("failpoint %s did not fire: %v", failpoint.PauseAfterRecord, err)
	}
	if code := in.proc("run").exitCode(); code != failpoint.ExitCode {
		t.Fatalf("ingestor run exited with %d, want the failpoint's %d", code, failpoint.ExitCode)
	}
	rec, err := pause.Read(in.walDir)
	if err != nil || rec.Datasets["held"].Reason != "crash test" {
		t.Fatalf("record after the crash = %+v, %v; want held paused", rec, err)
	}

	in.start("run")
	in.waitReady(t, time.Minute)
	for _, topic := range []string{"held", "flowing"} {
		if err := w.produce(ctx, topic, 300, 500, 0, eventTime); err != nil {
			t.Fatal(err)
		}
	}
	w.waitRows(t, map[string]int64{"crash.flowing": 800}, 2*time.Minute)
	time.Sleep(2 * time.Second)
	if got := consumed("held"); got != 0 {
		t.Fatalf("after the crash the paused dataset read %v records", got)
	}
	if rows := w.tableRows(ctx, "crash.held"); rows != 300 {
		t.Fatalf("crash.held holds %d rows while paused, want 300", rows)
	}
	// Asking again, as the error said, changes nothing.
	if code, out := cli("pause", "--dataset", "held"); code != 0 || !strings.Contains(out, "nothing to do") || !strings.Contains(out, "(crash test)") {
		t.Fatalf("second pause: exit %d\n%s", code, out)
	}
	if code, out := cli("resume", "--dataset", "held"); code != 0 || !strings.Contains(out, "resumed held") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	w.waitRows(t, map[string]int64{"crash.held": 800}, 2*time.Minute)
	in.stop(t, 90*time.Second)
	for _, name := range []string{"crash.held", "crash.flowing"} {
		if missing, dup, unexpected, rows := w.exactlyOnce(t, name, 0, 800); missing+dup+unexpected != 0 || rows != 800 {
			t.Errorf("%s: %d missing, %d duplicated, %d unexpected, %d rows; want each of 800 events once", name, missing, dup, unexpected, rows)
		}
	}
}

// exitErrorCode is the exit code of an ingestor command that ran and
// failed.
const exitErrorCode = 1
