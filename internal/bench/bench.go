package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/wirevalues"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// Run runs one benchmark and returns its result. An error means the run
// could not be measured (a part did not start, the ingestor failed or the
// table could not be read); a run that lost or duplicated events returns a
// Result with ExactlyOnce false.
func Run(ctx context.Context, o Options) (*Result, error) {
	shape, err := devenv.ShapeByName(o.Shape)
	if err != nil {
		return nil, err
	}
	ten, err := devenv.NewTenancy(o.Keys, o.Tenants)
	if err != nil {
		return nil, err
	}
	switch {
	case o.SoakCommits < 0:
		return nil, fmt.Errorf("soak-commits: want 0 (no soak) or more, got %d", o.SoakCommits)
	case o.Events < 1 && o.SoakCommits == 0:
		return nil, fmt.Errorf("events: want at least 1, got %d", o.Events)
	case o.Rate < 0:
		return nil, fmt.Errorf("rate: want 0 (full speed) or more, got %d", o.Rate)
	case o.Partitions < 1:
		return nil, fmt.Errorf("partitions: want at least 1, got %d", o.Partitions)
	case o.KafkaKey != KeyTenant && o.KafkaKey != KeyEvent:
		return nil, fmt.Errorf("kafka-key: want %s or %s, got %q", KeyTenant, KeyEvent, o.KafkaKey)
	case o.Storage != "" && o.Storage != StorageAzurite && o.Storage != StorageFile:
		return nil, fmt.Errorf("storage: want %s or %s, got %q", StorageAzurite, StorageFile, o.Storage)
	case o.MaxFileAgeMinutes <= 0 || o.CommitIntervalSeconds <= 0:
		return nil, errors.New("max file age and commit interval must be positive")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultOptions().Timeout
	}
	if o.Storage == "" {
		o.Storage = StorageAzurite
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the ingestor binary: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	dir := o.Out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ingestor-bench-"); err != nil {
			return nil, fmt.Errorf("bench dir: %w", err)
		}
	} else if err := freshDir(dir); err != nil {
		return nil, err
	}
	var plan *devenv.Upserts
	if o.Upserts != 0 {
		if plan, err = devenv.NewUpserts(o.Upserts, o.UpsertTombstones); err != nil {
			return nil, err
		}
		shape, o.KafkaKey = devenv.UpsertShape(shape, plan), KeyEvent
	}
	vals, err := wirevalues.New(o.Format, topic, shape)
	if err != nil {
		return nil, err
	}
	defer vals.Close()
	b := &runner{o: o, dir: dir, shape: shape, vals: vals, ten: ten, run: rand.Uint32()}
	if plan != nil {
		b.lww = newLWWLedger(plan)
	}
	res, err := b.runAll(ctx)
	// The stop comes first: Azurite and the ingestor write in dir.
	b.close()
	if err != nil {
		// The logs stay for a person to read.
		return nil, fmt.Errorf("%w (the run's files are in %s)", err, dir)
	}
	if o.Out == "" {
		os.RemoveAll(dir)
	}
	if o.Out != "" {
		j, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "result.json"), append(j, '\n'), 0o644); err != nil {
			return nil, fmt.Errorf("write result: %w", err)
		}
	}
	return res, nil
}

// freshDir creates dir, or accepts it empty: a catalog or a WAL left by an
// earlier run would mix its rows into this one's table.
func freshDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("bench dir: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("bench dir %s is not empty: each run needs a new table, give a new directory", dir)
	}
	return nil
}

// runAll starts the parts and measures.
func (b *runner) runAll(ctx context.Context) (*Result, error) {
	if err := b.start(ctx); err != nil {
		return nil, err
	}
	return b.measure(ctx)
}

// runner is one run's parts.
type runner struct {
	o     Options
	dir   string
	shape devenv.Shape
	vals  *wirevalues.Values
	ten   *devenv.Tenancy
	run   uint32

	kafka   *devenv.Kafka
	azurite *devenv.Azurite
	cfg     *config.Config
	cfgPath string
	cat     catalog.Catalog
	sup     *exec.Cmd
	supDone chan struct{} // closed when sup has been waited for
	supErr  error
	logf    *os.File

	soakState *soakState // a soak run's checkpoints; nil otherwise
	lww       *lwwLedger // an upsert run's last-write-wins state; nil otherwise
}

// close stops whatever is still running, the ingestor first (by SIGKILL:
// an orderly stop already happened unless the run failed).
func (b *runner) close() {
	if b.sup != nil {
		select {
		case <-b.supDone:
		default:
			_ = b.sup.Process.Kill()
			<-b.supDone
		}
	}
	if b.logf != nil {
		b.logf.Close()
	}
	if c, ok := b.cat.(io.Closer); ok {
		c.Close()
	}
	if b.azurite != nil {
		_ = b.azurite.Stop()
	}
	if b.kafka != nil {
		b.kafka.Close()
	}
}

func (b *runner) say(format string, args ...any) {
	fmt.Fprintf(b.o.Log, "bench: "+format+"\n", args...)
}

// start starts the broker, Azurite, the table and the ingestor, and waits
// until the consumer holds every partition of the topic.
func (b *runner) start(ctx context.Context) error {
	var err error
	b.kafka, err = devenv.StartKafka(devenv.KafkaOptions{Partitions: b.o.Partitions, Topics: []string{topic}})
	if err != nil {
		return err
	}
	cat := map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(b.dir, "catalog.db"),
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
	}
	if b.o.Storage == StorageFile {
		wh := filepath.Join(b.dir, "warehouse")
		if err := os.MkdirAll(wh, 0o755); err != nil {
			return fmt.Errorf("warehouse dir: %w", err)
		}
		cat["warehouse"] = (&url.URL{Scheme: "file", Path: wh}).String()
	} else {
		b.azurite, err = devenv.StartAzurite(ctx, filepath.Join(b.dir, "azurite"))
		if err != nil {
			return err
		}
		if err := b.azurite.CreateContainer(ctx, "warehouse"); err != nil {
			return err
		}
		cat["warehouse"] = b.azurite.Location("warehouse", "wh")
		for k, v := range b.azurite.Properties() {
			cat[k] = v
		}
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	var metrics [5]string
	for i, p := range ports {
		metrics[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	// The drain budget covers a final rotation, upload and commit of
	// everything still open.
	yaml := configYAML(setup{
		walDir: filepath.Join(b.dir, "wal"), broker: b.kafka.Addrs()[0], catalog: cat,
		metrics: metrics, shape: b.shape, opts: b.o, drainSec: 120, format: b.vals.Format, registry: b.vals.RegistryURL(),
	})
	// The WAL directory exists before the ingestor starts, as a mounted
	// volume does in production.
	if err := os.MkdirAll(filepath.Join(b.dir, "wal"), 0o755); err != nil {
		return fmt.Errorf("wal dir: %w", err)
	}
	b.cfgPath = filepath.Join(b.dir, "ingestor.yaml")
	if err := os.WriteFile(b.cfgPath, []byte(yaml), 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if b.cfg, err = config.Load(b.cfgPath); err != nil {
		return err
	}
	if b.cat, err = tables.OpenCatalog(ctx, b.cfg.Catalog); err != nil {
		return err
	}
	if _, err := tables.Load(ctx, b.cat, b.cfg.Datasets[0]); err != nil {
		return err
	}

	if b.logf, err = os.Create(filepath.Join(b.dir, "ingestor.log")); err != nil {
		return fmt.Errorf("ingestor log: %w", err)
	}
	b.sup = exec.Command(b.o.Binary, "run", "--config", b.cfgPath)
	b.sup.Stdout, b.sup.Stderr = b.logf, b.logf
	setProcAttr(b.sup)
	if err := b.sup.Start(); err != nil {
		b.sup = nil
		return fmt.Errorf("start %s run: %w", b.o.Binary, err)
	}
	b.supDone = make(chan struct{})
	go func() {
		b.supErr = b.sup.Wait()
		close(b.supDone)
	}()
	events := strconv.FormatInt(b.o.Events, 10)
	if b.o.SoakCommits > 0 {
		events = "soak of " + strconv.Itoa(b.o.SoakCommits) + " commits,"
	}
	b.say("%s %s events, keys %s over %d tenants, %d partitions, rate %s; ingestor pid %d, logs in %s",
		b.o.Shape, events, b.o.Keys, b.o.Tenants, b.o.Partitions, rateText(b.o.Rate),
		b.sup.Process.Pid, b.logf.Name())

	deadline := time.Now().Add(90 * time.Second)
	for {
		s, err := devenv.Scrape(ctx, b.cfg.Metrics.Roles.Consumer)
		if err == nil && s.Sum("ingestor_consumer_partitions_assigned") >= float64(b.o.Partitions) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the consumer did not take the %d partitions within 90s (log: %s)", b.o.Partitions, b.logf.Name())
		}
		if err := b.sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits for d, returning early with an error when ctx ends or the
// ingestor exits.
func (b *runner) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("bench stopped: %w", ctx.Err())
	case <-b.supDone:
		return fmt.Errorf("the ingestor exited during the run (%v); see %s", b.supErr, b.logf.Name())
	case <-time.After(d):
		return nil
	}
}

// measure produces the events, follows them to the table, stops the
// ingestor and scores the table.
func (b *runner) measure(ctx context.Context) (*Result, error) {
	procs := newTree(b.sup.Process.Pid)
	cpu0, err := procs.mark()
	if err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		procs.watch(watchCtx, 200*time.Millisecond)
	}()
	defer func() {
		stopWatch()
		<-watchDone
	}()

	gen, err := devenv.NewGenerator(b.kafka.Addrs(), topic)
	if err != nil {
		return nil, err
	}
	defer gen.Close()
	gen.Rate = b.o.Rate
	if b.lww != nil {
		gen.Acked = b.lww.acked
	}
	var jsonBytes atomic.Int64
	// Events are keyed by tenant, as a keyed topic is: one tenant's events
	// stay in one Kafka partition, in order. Keyed by event, every tenant
	// appears in every partition.
	gen.Payload = func(seq int64, at time.Time) ([]byte, []byte, error) {
		if b.lww != nil {
			return b.upsertPayload(seq, at, &jsonBytes)
		}
		t := b.ten.Of(seq)
		name := b.ten.Name(t)
		id := devenv.EventID(b.run, seq)
		v, err := b.vals.Append(make([]byte, 0, 2304), id, name, seq, at)
		if err != nil {
			// The shapes' Avro and Protobuf encodings are tested to carry
			// every event (devenv); an event that does not encode stops
			// the generator, and the run, which cannot be scored.
			return nil, nil, err
		}
		jsonBytes.Add(int64(len(v)))
		if b.o.KafkaKey == KeyEvent {
			return []byte(id), v, nil
		}
		return []byte(name), v, nil
	}
	t0 := time.Now()
	genCtx, stopGen := context.WithCancel(ctx)
	genDone := make(chan error, 1)
	var produced time.Duration
	go func() {
		// A soak run produces until soak stops it, whatever Events
		// says: its default (3M) stopped a soak after ten minutes at
		// 5,000 events/s.
		count := b.o.Events
		if b.o.SoakCommits > 0 {
			count = 0
		}
		err := gen.Run(genCtx, 0, count)
		produced = time.Since(t0)
		genDone <- err
	}()
	genRunning := true
	defer func() {
		stopGen()
		if genRunning {
			<-genDone
		}
	}()
	if b.o.SoakCommits > 0 {
		// soak returns with the generator stopped and waited for.
		err := b.soak(ctx, t0, stopGen, genDone)
		genRunning = false
		if err != nil {
			return nil, err
		}
		// From here on the run is an ordinary one of the events produced.
		b.o.Events, _ = gen.Produced()
		b.say("%4.0fs soak: %d commits made; %d events produced", time.Since(t0).Seconds(), b.o.SoakCommits, b.o.Events)
	}

	// Follow the consumer until it has written every event.
	var consumed time.Duration
	lastLine, lastTable := t0, t0
	for consumed == 0 {
		select {
		case err := <-genDone:
			genRunning = false
			if err != nil {
				return nil, fmt.Errorf("generator: %w", err)
			}
		default:
		}
		s, err := devenv.Scrape(ctx, b.cfg.Metrics.Roles.Consumer)
		if err == nil {
			written := s.Sum("ingestor_consumer_rows_written_total")
			if written >= float64(b.o.Events) && !genRunning {
				consumed = time.Since(t0)
			}
			// A consumer that restarted counts from zero again; the table
			// then tells when everything got through.
			if consumed == 0 && !genRunning && time.Since(lastTable) >= 2*time.Second {
				lastTable = time.Now()
				if b.tableRows(ctx) >= b.o.Events {
					consumed = time.Since(t0)
				}
			}
			if time.Since(lastLine) >= 5*time.Second {
				lastLine = time.Now()
				good, _ := gen.Produced()
				b.say("%4.0fs produced %d, written to the WAL %.0f, open segments %.0f",
					time.Since(t0).Seconds(), good, written, s.Sum("ingestor_consumer_segments_open"))
			}
		}
		if consumed == 0 {
			// Each scrape costs the consumer a little CPU, which counts.
			if err := b.sleep(ctx, 250*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	load := loadAverage()
	b.say("%4.0fs all %d events written to the WAL (%.0f/s); produced in %.1fs; load average %.2f",
		consumed.Seconds(), b.o.Events, float64(b.o.Events)/consumed.Seconds(), produced.Seconds(), load)

	// Then until they are all in the table, as they get there in
	// production: rotation by age, upload, commit.
	settle := time.Duration((b.o.MaxFileAgeMinutes*60+3*b.o.CommitIntervalSeconds)*float64(time.Second)) + time.Minute
	deadline := time.Now().Add(settle)
	for {
		rows := b.tableRows(ctx)
		if rows >= b.o.Events {
			b.say("%4.0fs the table holds all %d events", time.Since(t0).Seconds(), rows)
			break
		}
		if time.Now().After(deadline) {
			b.say("the table holds %d of %d events after %s more: stopping the ingestor, whose drain commits the rest",
				rows, b.o.Events, settle.Round(time.Second))
			break
		}
		if err := b.sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}

	// A soak with idle compaction runs on until the partitions are idle
	// and upkeep has merged them, as the end of a day would.
	if b.soakState != nil && b.o.Maintenance != nil && *b.o.Maintenance && b.o.IdleCompactionMinutes > 0 {
		wait := time.Duration((b.o.IdleCompactionMinutes*60+3*b.o.CommitIntervalSeconds)*float64(time.Second)) + 5*time.Second
		b.say("%4.0fs soak: waiting %s for the partitions to go idle", time.Since(t0).Seconds(), wait.Round(time.Second))
		if err := b.sleep(ctx, wait); err != nil {
			return nil, err
		}
		idle := time.Duration((b.o.IdleCompactionMinutes*60+3*b.o.MaintenanceIntervalSeconds)*float64(time.Second)) + time.Second
		took, settled, err := b.settleUpkeep(ctx, idle)
		if err != nil {
			return nil, err
		}
		b.soakState.settle, b.soakState.settled = took, settled
		if settled {
			b.say("%4.0fs soak: upkeep caught up %s later (nothing compacted for the idle time)", time.Since(t0).Seconds(), took.Round(time.Second))
		} else {
			b.say("%4.0fs soak: upkeep had not caught up after %s; stopping anyway", time.Since(t0).Seconds(), took.Round(time.Second))
		}
	}

	// Why the segments rotated so far (size, age, ...); the drain adds
	// its own, "shutdown", after this.
	var rotations map[string]float64
	if s, err := devenv.Scrape(ctx, b.cfg.Metrics.Roles.Consumer); err == nil {
		rotations = s.ByLabel("ingestor_consumer_files_rotated_total", "trigger")
	}
	var restarts float64
	if s, err := devenv.Scrape(ctx, b.cfg.Metrics.Address); err == nil {
		restarts = s.Sum("ingestor_supervisor_role_restarts_total")
	}

	if b.soakState != nil {
		if m, ok := b.scrapeRewritten(ctx); ok {
			b.soakState.metric = m
		}
	}
	// An orderly stop, as Kubernetes does it.
	if err := b.sup.Process.Signal(syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stop the ingestor: %w", err)
	}
	select {
	case <-b.supDone:
	case <-time.After(b.cfg.DrainTimeout() + 30*time.Second):
		return nil, fmt.Errorf("the ingestor did not exit within its drain timeout (log: %s)", b.logf.Name())
	}
	stopWatch()
	<-watchDone
	if b.supErr != nil {
		return nil, fmt.Errorf("the ingestor exited with %v (log: %s)", b.supErr, b.logf.Name())
	}
	// The supervisor's rusage includes every child it waited for, which is
	// all of them after an orderly stop.
	ru, ok := b.sup.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, errors.New("no resource usage of the ingestor")
	}
	cpuAll := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	cpu := cpuAll - cpu0
	b.say("ingestor stopped; %.1f CPU seconds since the first event; scoring the table", cpu.Seconds())

	tbl, err := b.cat.LoadTable(ctx, table.Identifier(b.cfg.Datasets[0].TableIdent()))
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	if b.soakState != nil {
		if err := b.checkpoint(ctx, t0, true); err != nil {
			return nil, err
		}
	}
	sc, err := scoreTable(ctx, tbl, b.run, b.o.Events, b.ten)
	if err != nil {
		return nil, err
	}
	r := b.result(sc, procs, t0, consumed, produced, cpu, cpu0, jsonBytes.Load())
	if b.soakState != nil {
		r.SoakResult = b.soakState.result(b.o.SoakCommits)
	}
	if b.lww != nil {
		if err := b.scoreUpserts(ctx, tbl, r); err != nil {
			return nil, err
		}
	}
	r.Maintenance = b.o.Maintenance
	r.LoadAverage1m = load
	r.Restarts = int(restarts)
	r.RotationsByTrigger = map[string]int{}
	for trigger, n := range rotations {
		r.RotationsByTrigger[trigger] = int(n)
	}
	return r, nil
}

// tableRows reads the row count of the table's current snapshot; -1 when
// the catalog cannot be read.
func (b *runner) tableRows(ctx context.Context) int64 {
	tbl, err := b.cat.LoadTable(ctx, table.Identifier(b.cfg.Datasets[0].TableIdent()))
	if err != nil {
		return -1
	}
	s := tbl.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
	if b.lww != nil {
		n = max(n, committedRecords(tbl))
	}
	return n
}

func (b *runner) result(sc *score, procs *tree, t0 time.Time, consumed, produced, cpu, cpu0 time.Duration, jsonBytes int64) *Result {
	r := &Result{
		Shape: b.o.Shape, Format: b.o.Format, Keys: b.o.Keys, Events: b.o.Events, Rate: b.o.Rate,
		Tenants: b.o.Tenants, Partitions: b.o.Partitions, KafkaKey: b.o.KafkaKey, Storage: b.o.Storage,
		MaxFileAgeMinutes: b.o.MaxFileAgeMinutes, CommitIntervalSeconds: b.o.CommitIntervalSeconds,
		Cores:                runtime.NumCPU(),
		Seconds:              round(consumed.Seconds(), 3),
		ProduceSeconds:       round(produced.Seconds(), 3),
		RowsPerSec:           round(float64(b.o.Events)/consumed.Seconds(), 0),
		CPUSeconds:           round(cpu.Seconds(), 3),
		StartupCPUSeconds:    round(cpu0.Seconds(), 3),
		CPUSecondsByRole:     map[string]float64{},
		RowsPerCPUSec:        round(float64(b.o.Events)/cpu.Seconds(), 0),
		JSONBytes:            jsonBytes,
		JSONMBPerCPUSec:      round(float64(jsonBytes)/1e6/cpu.Seconds(), 2),
		FreshnessP50:         round(quantile(sc.freshness, 0.50), 3),
		FreshnessP95:         round(quantile(sc.freshness, 0.95), 3),
		FreshnessMax:         round(quantile(sc.freshness, 1), 3),
		FreshnessUnknownRows: sc.freshnessUnknown,
		Files:                len(sc.files),
		Commits:              sc.commits,
		PeakRSSBytes:         procs.peaks(),
		ExactlyOnce:          sc.exactlyOnce(),
		TableRows:            sc.rows,
		Missing:              sc.missing,
		Duplicated:           sc.duplicated,
		Unexpected:           sc.unexpected,
		WrongTenant:          sc.wrongTenant,
	}
	if sc.lastCommitMs > 0 {
		r.SecondsToTable = round(float64(sc.lastCommitMs-t0.UnixMilli())/1e3, 3)
	}
	for role, d := range procs.cpuByRole() {
		r.CPUSecondsByRole[role] = round(d.Seconds(), 3)
	}
	sizes := make([]int64, len(sc.files))
	rows := make([]int64, len(sc.files))
	var first, others, neighbours, apart []int64
	// The generator's producer places a keyed record as Kafka clients do
	// (murmur2 of the key): the same partitioner tells which tenants
	// share the first one's Kafka partition.
	kpart := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	partOf := func(tenant string) int {
		return kpart.Partition(&kgo.Record{Key: []byte(tenant)}, int(b.o.Partitions))
	}
	for i, f := range sc.files {
		sizes[i], rows[i] = f.size, f.rows
		switch {
		case f.tenant == b.ten.Name(0):
			first = append(first, f.size)
		case b.o.KafkaKey != KeyTenant:
			others = append(others, f.size)
		case partOf(f.tenant) == partOf(b.ten.Name(0)):
			others, neighbours = append(others, f.size), append(neighbours, f.size)
		default:
			others, apart = append(others, f.size), append(apart, f.size)
		}
	}
	slices.Sort(neighbours)
	slices.Sort(apart)
	r.NeighbourTenantsFileSizeP50Bytes = quantile(neighbours, 0.5)
	r.ApartTenantsFileSizeP50Bytes = quantile(apart, 0.5)
	slices.Sort(sizes)
	slices.Sort(rows)
	slices.Sort(first)
	slices.Sort(others)
	r.FirstTenantFileSizeP50Bytes = quantile(first, 0.5)
	r.OtherTenantsFileSizeP50Bytes = quantile(others, 0.5)
	r.FileSizeP50Bytes = quantile(sizes, 0.5)
	r.RowsPerFileP50 = quantile(rows, 0.5)
	if len(sizes) > 0 {
		r.FileSizeBytes = map[string]int64{
			"min": sizes[0], "p10": quantile(sizes, 0.1), "p50": quantile(sizes, 0.5),
			"p90": quantile(sizes, 0.9), "max": sizes[len(sizes)-1],
		}
	}
	if sc.commits > 0 {
		r.FilesPerCommit = round(float64(len(sc.files))/float64(sc.commits), 2)
	}
	return r
}

// loadAverage reads the 1-minute load average, 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func round(v float64, digits int) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func rateText(rate int) string {
	if rate == 0 {
		return "full speed"
	}
	return strconv.Itoa(rate) + "/s"
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
