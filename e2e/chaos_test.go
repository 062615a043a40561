package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/failpoint"
)

// Chaos test figures: at least chaosEvents events over chaosPartitions
// partitions, produced over chaosProduce while processes are killed every
// 2 to 6 seconds, at least chaosMinKills times.
const (
	chaosEvents     = 200_000
	chaosPartitions = 8
	chaosProduce    = 120 * time.Second
	chaosMinKills   = 30
)

// chaosFailpoints arms every failpoint with a small probability in every
// process: crashes at the exact step boundaries, on top of the SIGKILLs at
// random moments. The probabilities are set for about one crash per point
// per run at this test's rates (a point hit once per segment fires less
// often than one hit once per commit).
var chaosFailpoints = map[string]string{
	failpoint.ConsumerBeforeRename:    "p0.0003",
	failpoint.ConsumerBeforeDirSync:   "p0.01",
	failpoint.ConsumerAfterRename:     "p0.01",
	failpoint.ConsumerAfterCommit:     "p0.01",
	failpoint.ConsumerDuringRecovery:  "p0.05",
	failpoint.UploaderBeforeObject:    "p0.0003",
	failpoint.UploaderBeforeMarker:    "p0.0003",
	failpoint.UploaderAfterMarker:     "p0.0003",
	failpoint.CommitterAfterAppend:    "p0.004",
	failpoint.CommitterBetweenDeletes: "p0.0003",
	failpoint.CommitterAfterDataset:   "p0.004",
}

// layouts of an instance's processes.
const (
	layoutRun   = "run"   // `ingestor run`: the supervisor restarts its children
	layoutRoles = "roles" // the three roles as separate processes, restarted by the test
)

// keeper restarts an instance's processes the way Kubernetes restarts the
// containers of a pod: whatever exits is started again after a short
// delay, in the instance's current layout.
type keeper struct {
	in     *instance
	rng    func() time.Duration
	mu     sync.Mutex
	layout string
	on     bool
	dead   map[string]time.Time // when a process was first seen gone
	starts int
}

func (k *keeper) expected() []string {
	if k.layout == layoutRun {
		return []string{"run"}
	}
	return []string{"consumer", "uploader", "committer"}
}

// loop restarts exited processes until ctx ends.
func (k *keeper) loop(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.mu.Lock()
		if k.on {
			for _, what := range k.expected() {
				p := k.in.proc(what)
				if p != nil && p.running() {
					delete(k.dead, what)
					continue
				}
				since, ok := k.dead[what]
				if !ok {
					k.dead[what] = time.Now().Add(k.rng())
					continue
				}
				if time.Now().After(since) {
					k.in.start(what)
					k.starts++
					delete(k.dead, what)
				}
			}
		}
		k.mu.Unlock()
	}
}

// set changes the layout and whether exited processes are restarted.
func (k *keeper) set(layout string, on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.layout, k.on = layout, on
	k.dead = map[string]time.Time{}
}

// pids returns the instance's live processes: the supervisor and its
// children, or the role processes, by what they run.
func (k *keeper) pids() map[int]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[int]string{}
	for _, what := range k.expected() {
		p := k.in.proc(what)
		if p == nil || !p.running() {
			continue
		}
		out[p.cmd.Process.Pid] = what
		if what == "run" {
			for _, c := range childPIDs(p.cmd.Process.Pid) {
				out[c] = roleOf(c)
			}
		}
	}
	return out
}

// complete reports whether every process of the instance runs: the
// supervisor with its three children, or the three roles.
func (k *keeper) complete() bool {
	roles := map[string]bool{}
	for _, what := range k.pids() {
		roles[what] = true
	}
	return roles["consumer"] && roles["uploader"] && roles["committer"]
}

// gone waits until pid has exited (or is a zombie nobody reaps).
func gone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestChaos runs two instances of the ingestor in one consumer group, each
// with its own WAL directory, into one partitioned table, while it SIGKILLs
// a random role or a whole instance every few seconds and the failpoints
// crash processes at step boundaries. Instance a starts as `ingestor run`
// and instance b as three separate role processes; halfway through they
// swap layouts. Then it stops both in order, lets them take what is left
// in Kafka, stops them again and scans the table: every event exactly once.
//
// It runs one round, beside a CPU hog on every core (where heartbeats,
// sessions and rebalances run late) when the seed is odd and on a quiet
// machine when it is even, so that runs of the test suite cover both
// within its time budget. CHAOS_RUNS=N runs N rounds instead, every other
// one beside the hog, with the seeds
// CHAOS_SEED, CHAOS_SEED+1, ... (CHAOS_SEED defaults to the clock): a long
// hunt. A failed round prints its seed and keeps its logs and WAL
// directories (the path is in the test log).
func TestChaos(t *testing.T) { chaosRounds(t, appendChaos) }

// TestChaosUpserts is TestChaos for an upsert dataset (upsertChaos): the
// same two instances, kills and crashes, the committer also at
// committer.after-delete-files; each kill of a whole instance moves
// partitions whose older segments wait in its WAL, so the new owner's
// appends must wait for them. At the end the table read with its deletes
// applied must be the last-write-wins state of what was produced, and no
// segment counted out of order. CHAOS_SEED and CHAOS_RUNS work as for
// TestChaos.
func TestChaosUpserts(t *testing.T) { chaosRounds(t, upsertChaos) }

// upsertChaos is shorter than TestChaos's round: 40 seconds of production.
var upsertChaos = chaosShape{upserts: true, events: 40_000, produce: 40 * time.Second, minKills: 10}

// chaosRounds runs the rounds of a chaos test of shape.
func chaosRounds(t *testing.T, shape chaosShape) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the supervisor's children in /proc")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	runs, hogs := 1, []bool{seed%2 == 1}
	if s := os.Getenv("CHAOS_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_RUNS=%q: want a positive number", s)
		}
		runs, hogs = n, nil
		for i := range n {
			hogs = append(hogs, i%2 == 1)
		}
	}
	failed := 0
	for i := range runs {
		s, hog := seed+uint64(i), hogs[i]
		name := fmt.Sprintf("run%d_seed%d", i+1, s)
		if hog {
			name += "_cpu_hog"
		}
		if !t.Run(name, func(t *testing.T) { chaosRound(t, s, hog, shape) }) {
			failed++
		}
	}
	t.Logf("chaos: %d of %d rounds failed", failed, runs)
}

// cpuHog keeps every core busy with a shell loop until the test ends.
func cpuHog(t *testing.T) {
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start cpu hog: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}

// keepOnFailure copies dirs (the logs, configs and WAL directories of a
// round) out of the test's temporary directory when the test failed.
func keepOnFailure(t *testing.T, seed uint64, dirs ...string) {
	if !t.Failed() {
		return
	}
	dst, err := os.MkdirTemp("", fmt.Sprintf("ingestor-chaos-seed%d-", seed))
	if err != nil {
		t.Logf("keep logs and WAL: %v", err)
		return
	}
	for _, d := range dirs {
		if err := os.CopyFS(filepath.Join(dst, filepath.Base(d)), os.DirFS(d)); err != nil {
			t.Logf("keep %s: %v", d, err)
		}
	}
	t.Logf("chaos round with seed %d failed (replay: CHAOS_SEED=%d CHAOS_RUNS=1); logs and WAL kept in %s", seed, seed, dst)
}

// chaosShape is what a chaos round ingests and how long it kills.
type chaosShape struct {
	// upserts runs an upsert dataset (upsertDataset) and checks the table
	// against the last-write-wins state of what was produced; else the
	// dataset appends events, each exactly once.
	upserts  bool
	events   int64
	produce  time.Duration
	minKills int
}

var appendChaos = chaosShape{events: chaosEvents, produce: chaosProduce, minKills: chaosMinKills}

// chaosRound is one round of TestChaos with the choices of seed.
func chaosRound(t *testing.T, seed uint64, hog bool, shape chaosShape) {
	t.Logf("chaos seed %d, cpu hog %v (set CHAOS_SEED to replay the same choices)", seed, hog)
	if hog {
		cpuHog(t)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	var rmu sync.Mutex
	between := func(lo, hi time.Duration) time.Duration {
		rmu.Lock()
		defer rmu.Unlock()
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	pick := func(n int) int {
		rmu.Lock()
		defer rmu.Unlock()
		return rng.IntN(n)
	}

	began := time.Now()
	topic := "chaos"
	ds := []dataset{datasetOf(topic)}
	fpProbs := chaosFailpoints
	if shape.upserts {
		topic = "chaosup"
		ds = []dataset{upsertDataset(topic)}
		fpProbs = maps.Clone(chaosFailpoints)
		// About one crash each between writing an append's delete
		// files and its commit, and right after the commit, per round.
		fpProbs[failpoint.CommitterAfterDeleteFiles] = "p0.02"
		fpProbs[failpoint.CommitterAfterAppend] = "p0.02"
	}
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: chaosPartitions})
	var fps []string
	for name, p := range fpProbs {
		fps = append(fps, name+"="+p)
	}
	env := []string{failpoint.EnvVar + "=" + strings.Join(fps, ",")}
	opts := instanceOptions{datasets: ds, maxFileAgeMinutes: 0.05, env: env}
	// Two pods in one group: with upserts, every kill of a whole pod
	// moves partitions whose older segments wait in the dead pod's WAL.
	ins := []*instance{w.newInstance("a", opts), w.newInstance("b", opts)}
	var dirs []string
	for _, in := range ins {
		defer in.dumpLogs()
		dirs = append(dirs, in.dir)
	}
	// A failed round keeps what it leaves behind, once its processes
	// are dead (killAll may run twice).
	defer func() {
		if t.Failed() {
			w.killAll()
			keepOnFailure(t, seed, dirs...)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keepers := map[*instance]*keeper{}
	for _, in := range ins {
		k := &keeper{in: in, rng: func() time.Duration { return between(200*time.Millisecond, 1200*time.Millisecond) }, dead: map[string]time.Time{}}
		keepers[in] = k
		go k.loop(ctx)
	}
	layouts := []string{layoutRun, layoutRoles}
	for i, in := range ins {
		keepers[in].set(layouts[i], true)
	}

	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 600 * time.Millisecond) }
	produced := make(chan error, 1)
	stream := &orderStream{rng: rand.New(rand.NewPCG(seed, 2)), live: map[int64]int64{}}
	go func() {
		rate := int(float64(shape.events) / shape.produce.Seconds())
		if shape.upserts {
			produced <- w.produceOrders(ctx, topic, stream, shape.events, rate)
			return
		}
		produced <- w.produce(ctx, topic, 0, shape.events, rate, at)
	}()

	kills := map[string]int{}
	var killLog []string
	kill := func(in *instance, kind string) {
		k := keepers[in]
		pids := k.pids()
		var victims []int
		switch kind {
		case "role":
			var roles []int
			for pid, what := range pids {
				if what == "consumer" || what == "uploader" || what == "committer" {
					roles = append(roles, pid)
				}
			}
			if len(roles) == 0 {
				return // every role is being restarted right now
			}
			victims = []int{roles[pick(len(roles))]}
			kind = "role:" + pids[victims[0]]
		case "tree":
			for pid := range pids {
				victims = append(victims, pid)
			}
			kind = "tree:" + k.layout
		}
		for _, pid := range victims {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range victims {
			if !gone(pid, 10*time.Second) {
				t.Fatalf("pid %d survived SIGKILL", pid)
			}
		}
		// The test's own children: wait until they are reaped, so that
		// nothing later takes a killed process for a running one.
		for _, what := range []string{"run", "consumer", "uploader", "committer"} {
			if p := in.proc(what); p != nil && slices.Contains(victims, p.cmd.Process.Pid) {
				<-p.done
			}
		}
		kills[kind]++
		killLog = append(killLog, fmt.Sprintf("%s %s/%s", time.Since(began).Round(time.Millisecond), in.name, kind))
	}

	producing, swapped := true, false
	half := time.Now().Add(shape.produce / 2)
	for producing || total(kills) < shape.minKills {
		select {
		case err := <-produced:
			if err != nil {
				t.Fatalf("produce: %v", err)
			}
			producing = false
			continue
		case <-time.After(between(2*time.Second, 6*time.Second)):
		}
		if !swapped && time.Now().After(half) {
			// Halfway: every instance dies whole and comes back in
			// the other layout, on the same WAL directory.
			for i, in := range ins {
				keepers[in].set(layouts[i], false)
				kill(in, "tree")
				keepers[in].set(layouts[1-i], true)
			}
			swapped = true
			continue
		}
		in := ins[pick(len(ins))]
		if pick(10) < 7 {
			kill(in, "role")
		} else {
			kill(in, "tree")
		}
	}
	chaosEnd := time.Since(began)

	// Orderly stop of both instances at once, as a rolling deploy's
	// SIGTERMs, once every process is up again (a supervisor may be
	// waiting out a child's restart delay); then both come back without
	// failpoints to take what is left in Kafka, and stop in order again.
	for _, in := range ins {
		k := keepers[in]
		deadline := time.Now().Add(60 * time.Second)
		for !k.complete() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not every process is running 60 s after the chaos", in.name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		k.set(k.layout, false)
	}
	stopBoth := func(also ...int) {
		var ps [][]*xproc
		for _, in := range ins {
			ps = append(ps, in.terminate())
		}
		for i, in := range ins {
			in.awaitExit(t, ps[i], 90*time.Second, also...)
		}
	}
	// The failpoints are still armed: a process may crash at one while it
	// drains (exit code 77), and one restarted a moment ago may not have
	// set up its SIGTERM handler yet, so that SIGTERM ends it at once (-1).
	// Recovery handles both like any other crash; the stop after the
	// catch-up below must be clean.
	stopBoth(failpoint.ExitCode, -1)
	for _, in := range ins {
		in.env = nil
		for _, what := range keepers[in].expected() {
			in.start(what)
		}
	}
	if shape.upserts {
		w.waitState(t, ds[0].table, stream.live, 3*time.Minute)
	} else {
		w.waitRows(t, map[string]int64{"crash.chaos": shape.events}, 3*time.Minute)
	}
	for _, in := range ins {
		in.waitReady(t, 30*time.Second)
	}
	stopBoth()
	cancel()

	fired := 0
	for _, in := range ins {
		for _, what := range []string{"run", "consumer", "uploader", "committer"} {
			fired += len(failpointLine.FindAllString(in.log(what), -1))
		}
	}
	n := total(kills)
	starts := 0
	for _, in := range ins {
		starts += keepers[in].starts
	}
	if shape.upserts {
		got, twice, err := w.tableState(context.Background(), ds[0].table)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("chaos with upserts: %d records over %d partitions (%d updates, %d deletes), %d live keys; %d SIGKILLs (%s) and %d failpoint crashes in %s of chaos; %d restarts by the test; total %s",
			shape.events, chaosPartitions, stream.updates, stream.deletes, len(stream.live), n, describe(kills), fired, chaosEnd.Round(time.Second),
			starts, time.Since(began).Round(time.Second))
		if diff := diffState(stream.live, got, twice); diff != "" {
			t.Logf("kills: %s", strings.Join(killLog, ", "))
			t.Fatalf("the table is not the last-write-wins state: %s", diff)
		}
		for _, in := range ins {
			if n := countLines(in, "upsert segment appended after another WAL directory"); n > 0 {
				t.Errorf("%s: %d upsert segments appended out of order", in.name, n)
			}
		}
	} else {
		missing, dup, unexpected, rows := w.exactlyOnce(t, "crash.chaos", 0, shape.events)
		t.Logf("chaos: %d events over %d partitions, %d table rows; %d SIGKILLs (%s) and %d failpoint crashes in %s of chaos; %d restarts by the test; total %s",
			shape.events, chaosPartitions, rows, n, describe(kills), fired, chaosEnd.Round(time.Second),
			starts, time.Since(began).Round(time.Second))
		fmt.Printf("kills survived: %d, lost: %d, duplicated: %d\n", n, missing, dup)
		if missing > 0 || dup > 0 || unexpected > 0 || rows != shape.events {
			t.Logf("kills: %s", strings.Join(killLog, ", "))
			t.Fatalf("table holds %d rows: %d events lost, %d duplicated, %d unexpected", rows, missing, dup, unexpected)
		}
	}
	if n < shape.minKills {
		t.Fatalf("only %d kills", n)
	}
	for _, in := range ins {
		if left := walLeft(t, in.walDir); len(left) > 0 {
			t.Errorf("WAL of %s not empty after the orderly stop: %v", in.name, left)
		}
	}
}

var failpointLine = regexp.MustCompile(`failpoint \S+ hit \(\d+\): exiting with code 77`)

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func describe(m map[string]int) string {
	var parts []string
	for _, k := range []string{"role:consumer", "role:uploader", "role:committer", "tree:run", "tree:roles"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// countLines counts the log lines of an instance's processes that hold s.
func countLines(in *instance, s string) int {
	n := 0
	for _, what := range []string{"run", "consumer", "uploader", "committer"} {
		n += strings.Count(in.log(what), s)
	}
	return n
}
