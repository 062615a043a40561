package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/kafkaclient"
	"github.com/icewal/ingestor/shared/parquetfmt"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// ageCheckInterval is how often idle segments are checked for their age:
// every 30 seconds at most, and a tenth of the age limit when that is
// shorter, so that a segment outlives its limit by little (the check is a
// loop over the open partitions, cheap at any rate).
func ageCheckInterval(maxAge time.Duration) time.Duration {
	return max(min(30*time.Second, maxAge/10), 100*time.Millisecond)
}

// Consumer runs one Kafka consumer group per dataset and writes the WAL.
type Consumer struct {
	cfg  *config.Config
	log  *slog.Logger
	m    *metrics
	gate *gate
	// walID names this WAL directory in the commit ledgers.
	walID string
	// mem counts the memory of every open segment of every dataset.
	mem  *budgetAllocator
	opts []kgo.Opt // extra client options, for tests
	// measure returns the WAL volume's use in percent; statfs by default.
	measure func(dir string) (float64, error)
	// volumeEvery is the time between two measurements; volumeBytes, when
	// set, the byte budget between two (volumeBudgetBytes by default).
	volumeEvery time.Duration
	volumeBytes int64
	// stallAfter is ingestion.stallTimeoutSeconds; unassignedAfter, when
	// set, replaces the watchdog's two session timeouts (for tests).
	stallAfter, unassignedAfter time.Duration
	// loops are the datasets' consumers, once Run set them up.
	loopsMu sync.Mutex
	loops   []*loop
	// idleWarnAfter is how long a dataset may have no partition before a
	// warning says so.
	idleWarnAfter time.Duration
	// tableEvery is how often each dataset's table is reloaded to see a
	// schema change (tableRefreshEvery; shorter in tests).
	tableEvery time.Duration
	// pauseMu makes Run's read of the pause record and Pause and Resume
	// happen one after the other: a Pause that arrives while Run starts
	// is either in the record Run reads (it is recorded before it is
	// sent) or applied after it, never overwritten by an older record.
	pauseMu sync.Mutex
}

// New builds a consumer for every dataset of cfg.
func New(cfg *config.Config, opts role.Options) (*Consumer, error) {
	opts = opts.Defaults()
	m := newMetrics(opts.Registerer)
	return &Consumer{
		cfg: cfg, log: opts.Logger, m: m,
		gate:    newGate(opts.Logger, m, cfg.Ingestion.WAL.DiskHighWatermarkPct),
		mem:     newBudgetAllocator(),
		measure: volumeUsedPct, volumeEvery: volumeCheckInterval, idleWarnAfter: 30 * time.Second,
		tableEvery: tableRefreshEvery,
		stallAfter: cfg.StallTimeout(),
	}, nil
}

// Pause is an operator's pause of one dataset (shared/pause): its
// consumer stops fetching, without leaving its group, until Resume. It
// keeps rotating its open segments by age and committing their offsets,
// and the uploader and committer carry on with what it wrote. The
// supervisor sends it over the RPC channel (rpc.WithPauser) once it has
// recorded the pause; in the sidecar layout the control socket's
// Controller calls it in this process. The record, not this call, is
// what keeps the pause across restarts: Run reads it at every start.
func (c *Consumer) Pause(_ context.Context, dataset string, e pause.Entry) error {
	if !c.configured(dataset) {
		return fmt.Errorf("pause: unknown dataset %q", dataset)
	}
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	c.gate.setOperator(dataset, &e)
	return nil
}

// Resume lifts an operator's pause of one dataset; the dataset stays
// paused while the WAL volume is above its high watermark.
func (c *Consumer) Resume(_ context.Context, dataset string) error {
	if !c.configured(dataset) {
		return fmt.Errorf("resume: unknown dataset %q", dataset)
	}
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	c.gate.setOperator(dataset, nil)
	return nil
}

func (c *Consumer) configured(dataset string) bool {
	for _, d := range c.cfg.Datasets {
		if d.Name == dataset {
			return true
		}
	}
	return false
}

// releaseTimeout is the longest drain step 1 may take: a quarter of the
// drain budget and never more than 10 seconds.
func releaseTimeout(drain time.Duration) time.Duration {
	return min(drain/4, 10*time.Second)
}

// Run recovers the WAL directory, then consumes until ctx is cancelled,
// when it rotates every open segment, commits the offsets and leaves the
// consumer groups. A WAL or offset-commit error is returned: it is fatal;
// but an offset commit that the drain's release step ran out of time for
// is not (release).
func (c *Consumer) Run(ctx context.Context) error {
	dir := c.cfg.Ingestion.WAL.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create wal dir: %w", err)
	}
	lock, err := walfile.AcquireLock(dir, role.Consumer)
	if err != nil {
		return err
	}
	defer lock.Release()
	if c.walID, err = walfile.WALID(dir); err != nil {
		return err
	}
	if err := walfile.RemoveTmp(dir); err != nil {
		return err
	}
	if err := walfile.RemoveStraySums(dir); err != nil {
		return err
	}
	// The operator's pauses hold from the first fetch: they are applied
	// to each dataset's client as soon as it exists (gate.add), before it
	// has joined its group.
	c.pauseMu.Lock()
	paused, err := pause.Read(dir)
	if err != nil {
		c.pauseMu.Unlock()
		return err
	}
	for _, n := range paused.Names() {
		if !c.configured(n) {
			c.log.Warn("the pause record names a dataset the configuration does not have: ignored (ingestor resume --dataset NAME clears it)", "dataset", n)
			delete(paused.Datasets, n)
			continue
		}
		e := paused.Datasets[n]
		c.log.Info("dataset stays paused by an operator", "dataset", n, "by", e.By, "reason", e.Reason, "since", e.Since)
	}
	c.gate.setOperatorAll(paused)
	c.pauseMu.Unlock()
	// The Go heap is held to the memory budget too, unless the operator
	// set GOMEMLIMIT: the collector then runs harder rather than letting
	// garbage push the process over it. Three eighths of the budget are
	// left to what the limit does not hold, so that the whole process
	// fits: the program's own pages (about 80 MB of resident memory for an
	// idle role) and the collector's overshoot while the live heap is near
	// the limit.
	if os.Getenv("GOMEMLIMIT") == "" && c.cfg.Ingestion.WAL.MemoryBudgetBytes > 0 {
		debug.SetMemoryLimit(c.cfg.Ingestion.WAL.MemoryBudgetBytes / 8 * 5)
	}
	// The row groups' copies of byte values that the pool keeps between
	// writes (four Columns) are outside the budget: a sixteenth of it in
	// all, 8 MiB each at most.
	if b := c.cfg.Ingestion.WAL.MemoryBudgetBytes; b > 0 {
		parquetfmt.SetKeptBlockBytes(min(parquetfmt.DefaultKeptBlockBytes, b/64))
	}

	// Setup and recovery are not interrupted by the drain signal half-way:
	// they use a context that only a hard stop ends.
	setup := context.WithoutCancel(ctx)
	cat, err := tables.OpenCatalog(setup, c.cfg.Catalog)
	if err != nil {
		return err
	}
	defer closeCatalog(cat, c.log)
	var loops []*loop
	// The registry clients end their fetches once every loop is done.
	regs := &registries{}
	defer regs.close()
	for _, ds := range c.cfg.Datasets {
		l, err := c.newLoop(setup, cat, ds, regs)
		if err != nil {
			for _, l := range loops {
				l.cl.Close()
			}
			return err
		}
		loops = append(loops, l)
	}

	// Recovery is done: set space aside for the notes and markers that
	// drain a volume that fills up later (walfile.WithReserve).
	if err := walfile.EnsureReserve(dir); err != nil {
		for _, l := range loops {
			l.cl.Close()
		}
		return err
	}

	// The volume is measured until the consumer returns, also while it
	// releases its partitions.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	go c.gate.watch(watchCtx, dir, c.measure, c.volumeEvery)

	// Also after every budget of bytes taken in: a fast backlog must not
	// pass the watermark between two ticks.
	budget := &volumeBudget{g: c.gate, dir: dir, measure: c.measure, every: c.volumeBytes}
	if budget.every <= 0 {
		budget.every = volumeBudgetBytes(dir)
	}
	for _, l := range loops {
		l.w.spend = budget.spend
	}

	c.loopsMu.Lock()
	c.loops = loops
	c.loopsMu.Unlock()
	g, gctx := errgroup.WithContext(context.WithoutCancel(ctx))
	for _, l := range loops {
		g.Go(func() error { return l.run(ctx, gctx) })
	}
	return g.Wait()
}

// loop is the consumer of one dataset.
type loop struct {
	c  *Consumer
	ds config.Dataset
	cl *kgo.Client
	w  *writer
	// fatal holds an error raised inside a group callback.
	fatal chan error
	// dlqErr holds the first failed dead-letter write.
	dlqErr errOnce
	// ledgers are the commit ledgers of the owned partitions.
	ledgerMu sync.Mutex
	ledgers  map[int32]walfile.Ledger
	// owned counts the partitions assigned to this loop.
	owned  atomic.Int64
	failed atomic.Bool // a fatal error ended the loop: revoke must not rotate (fatal.go)
	// repositionDue asks the poll loop to move the client's positions back
	// to the committed offsets after the group generation was lost
	// (rejoin.go).
	repositionDue atomic.Bool
	// topicID is the topic's id when the loop started; zero if unknown.
	topicID [16]byte
	// watch reloads the table for the writer (tableview.go).
	watch *tableWatch
	// cur is the record the writer is processing, read by deadLetter to
	// copy the key, headers and timestamp; only the poll loop touches it.
	cur *kgo.Record
	// format is how the dataset's values are read (format.go);
	// schemaWaits the partitions waiting for the registry (schemawait.go).
	format      *valueFormat
	schemaWaits schemaWaits
}

func (c *Consumer) newLoop(ctx context.Context, cat catalog.Catalog, ds config.Dataset, regs *registries) (*loop, error) {
	log := c.log.With("dataset", ds.Name)
	format, err := newValueFormat(c.cfg, ds, regs, registryDeps{log: log, m: c.m})
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	var writer func(context.Context) (*iceberg.Schema, error)
	if c.cfg.SchemaFromSource(ds) {
		writer = func(ctx context.Context) (*iceberg.Schema, error) {
			s, err := format.latest(ctx, ds.Topic)
			if err != nil {
				return nil, err
			}
			return format.tableSchema(s)
		}
	}
	tbl, err := tables.LoadFromSchema(ctx, cat, ds, writer)
	if err != nil {
		return nil, err
	}
	// Columns added to the create block go into the table before the
	// first segment is written for it; nothing is on disk yet, so a
	// crash here only repeats the check at the next start.
	if tbl, err = tables.Evolve(ctx, cat, tbl, ds, log); err != nil {
		return nil, err
	}
	if err := format.checkTable(ctx, ds, tbl.Schema(), log); err != nil {
		return nil, err // it names the dataset
	}
	view, err := newTableView(ds, format, tbl)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	l := &loop{c: c, ds: ds, fatal: make(chan error, 1), format: format}
	spec := tbl.Spec()
	w, err := newWriter(ds, c.cfg.Ingestion.WAL, tbl.Schema(), &spec, log, c.m, c.mem, l.commit)
	if err != nil {
		return nil, err
	}
	l.w = w
	w.useLocked(view) // before any goroutine sees w
	l.watch = l.newTableWatch(cat, view, log)
	w.dec.Limit(c.cfg.Ingestion.MaxRecordBytes, c.cfg.Ingestion.MaxJSONDepth)
	if ds.DeadLetterTopic != "" {
		w.deadLetter = l.deadLetter
	}

	start := kgo.NewOffset().AtStart()
	if ds.StartOffset == "latest" {
		start = kgo.NewOffset().AtEnd()
	}
	opts, err := kafkaclient.Opts(c.cfg.Kafka)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		kafkaclient.Logger(log),
		// The topic is added once recovery is done (below): a client
		// with a group and a topic joins the group at once.
		kgo.ConsumerGroup(ds.ConsumerGroup),
		kgo.ConsumeResetOffset(start),
		// Only the records of committed transactions reach the table;
		// the markers that end transactions are returned too, so that
		// offsets are committed past them (control.go).
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// A short heartbeat makes partitions move quickly between pods.
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.SessionTimeout(sessionTimeout),  // a killed member's partitions move after 6 s, not kgo's 45 s; 6 s is the brokers' default minimum
		kgo.RebalanceTimeout(5*time.Second), // under the session timeout: a member killed mid-rebalance holds the group up 5 s, not kgo's 60 s (kfake expels waiting members after a session)
		kgo.FetchMaxWait(500*time.Millisecond),
		// What the Kafka client buffers counts against the memory budget:
		// a sixteenth of it, shared by the datasets.
		kgo.FetchMaxBytes(fetchMaxBytes(c.cfg.Ingestion.WAL.MemoryBudgetBytes, len(c.cfg.Datasets))),
		// franz-go's FetchMaxPartitionBytes stays at its 1 MiB: raised to
		// FetchMaxBytes, a run of wide events behind its producer held
		// responses of 32 MiB and their decompressed records besides the
		// buffered rows, and the live heap passed the budget's shed mark
		// (docs/benchmarks.md, issue 13).
		kgo.OnPartitionsAssigned(l.assigned),
		kgo.OnPartitionsRevoked(l.revoked),
		kgo.OnPartitionsLost(l.lost),
	)
	opts = append(opts, c.opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: kafka client: %w", ds.Name, err)
	}
	l.cl = cl
	// A paused dataset's client is paused before it fetches anything.
	c.gate.add(l)
	// The topic's id as the consumer starts: recovery tells the files of
	// an earlier topic of the same name by it (topicgen.go), and the
	// watchdog compares its looks with it, so that a topic recreated
	// before its first look is seen too.
	l.topicID = topicIDOf(ctx, cl, ds.Topic)
	// Recovery needs the committed offsets and the table, and must finish
	// before this consumer writes anything.
	if err := recoverDir(ctx, c.cfg.Ingestion.WAL.Dir, ds, cl, tbl, l.topicID, c.m, log); err != nil {
		cl.Close()
		return nil, err
	}
	// Only now does the client join the group. A member that joined
	// before its recovery and died in it (a crash, a failpoint) left a
	// half-joined member behind: kfake arms no session timer for a member
	// whose join response it could not deliver, and a stable group then
	// kept that dead member and its partitions for good (watchdog.go).
	// A member busy with its recovery would also hold up the group's
	// rebalance for nothing.
	cl.AddConsumeTopics(ds.Topic)
	return l, nil
}

// run polls until drain is cancelled (an orderly stop) or hard ends.
func (l *loop) run(drain, hard context.Context) error {
	log := l.c.log.With("dataset", l.ds.Name)
	tick := ageCheckInterval(l.w.maxAge)
	nextAge := time.Now().Add(tick)
	// The watchdog lives as long as this loop; it raises what it cannot
	// mend as a fatal error, which ends the loop at its next turn.
	wd := newWatchdog(l, log, l.c.stallAfter)
	if l.c.unassignedAfter > 0 {
		wd.unassignedAfter = l.c.unassignedAfter
	}
	wctx, stopWatchdog := context.WithCancel(hard)
	var watching sync.WaitGroup
	watching.Go(func() { wd.run(wctx) })
	if l.watch != nil {
		watching.Go(func() { l.watch.run(wctx) })
	}
	defer watching.Wait()
	defer l.schemaWaits.wg.Wait()
	defer stopWatchdog()
	idleSince := time.Now()
	// A fetch error repeats at every fetch while it lasts (a recreated
	// topic's UNKNOWN_TOPIC_ID, thousands a second): one line a second.
	fetchLog := kafkaclient.NewLimiter(time.Second)
	for {
		select {
		case err := <-l.fatal:
			l.cl.Close()
			return err
		default:
		}
		if drain.Err() != nil {
			return l.release(hard, log)
		}
		pctx, cancel := context.WithTimeout(drain, tick)
		fetches := l.cl.PollRecords(pctx, 5000)
		cancel()
		if fetches.IsClientClosed() {
			return nil
		}
		if drain.Err() != nil {
			// Records that arrive once the release started are not written:
			// the next owner of the partition reads them from the committed
			// offset.
			return l.release(hard, log)
		}
		if l.repositionDue.Swap(false) {
			// The generation was lost: these records may come from the old
			// positions, past what is committed; they are read again.
			if err := l.reposition(hard); err != nil {
				l.abandon()
				return err
			}
			l.cl.AllowRebalance()
			continue
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if ok, suppressed := fetchLog.Allow(err.Error()); ok {
				log.Warn("fetch", "topic", topic, "partition", p, "error", err, "suppressed", suppressed)
			}
		})
		var werr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if l.schemaWaits.isWaiting(p.Partition) {
				return // read again from the record that waits (schemawait.go)
			}
		records:
			for _, r := range p.Records {
				switch {
				case werr != nil:
				case r.Attrs.IsControl():
					l.w.skip(r.Partition, r.Offset)
				default:
					l.cur = r
					werr = l.w.keyed(hard, r.Partition, r.Offset, r.Key, r.Value)
					l.cur = nil
					var sw *schemaWaitError
					if errors.As(werr, &sw) {
						werr = nil
						l.waitForSchema(wctx, r.Partition, r.Offset, sw.id)
						break records
					}
				}
			}
			if n := len(p.Records); n > 0 {
				lag := lagOf(p.HighWatermark, p.LastStableOffset, p.Records[n-1].Offset)
				l.c.m.lag.WithLabelValues(l.ds.Name, strconv.Itoa(int(p.Partition))).Set(float64(lag))
			}
		})
		if werr != nil && commitVoided(werr) {
			if werr = l.dropGeneration(hard, werr); werr == nil {
				l.cl.AllowRebalance()
				continue
			}
		}
		if werr != nil {
			l.abandon()
			return fmt.Errorf("dataset %s: %w", l.ds.Name, werr)
		}
		// A consumer that never gets a partition says why it may be, once
		// in a while, rather than waiting in silence: franz-go retries an
		// unreachable or refusing broker without end.
		if l.owned.Load() > 0 {
			idleSince = time.Now()
		} else if time.Since(idleSince) >= l.c.idleWarnAfter {
			log.Warn("no partitions assigned yet: the brokers may be unreachable or refuse the connection (check kafka.brokers, kafka.tls, kafka.sasl), or the group has more members than the topic has partitions",
				"topic", l.ds.Topic, "group", l.ds.ConsumerGroup, "waited", time.Since(idleSince).Round(time.Second).String())
			idleSince = time.Now()
		}
		if now := time.Now(); now.After(nextAge) {
			nextAge = now.Add(tick)
			err := l.w.rotateAged(hard)
			if err != nil && commitVoided(err) {
				err = l.dropGeneration(hard, err)
			}
			if err != nil {
				l.abandon()
				return fmt.Errorf("dataset %s: %w", l.ds.Name, err)
			}
		}
		l.cl.AllowRebalance()
	}
}

// release is drain step 1: rotate every open segment and commit the
// offsets while the partitions are still ours, then leave the group so
// Kafka hands the partitions to the other members at once. The step is
// bounded by releaseTimeout; if the offset commit has not landed by then,
// the ready files stay and the next start's recovery decides about them,
// and the drain goes on (the spec's "rotates the open segments itself and
// continues"): a broker slow to answer, or a machine too busy for the
// commit to finish in the step's time, is not a failure of the consumer.
// Nothing is lost or doubled either way: a ready file whose offsets were
// not committed is deleted by recovery and its records are read again by
// the partition's next owner; one whose commit landed unanswered is kept
// by recovery and appended.
func (l *loop) release(hard context.Context, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(hard, releaseTimeout(l.c.cfg.DrainTimeout()))
	defer cancel()
	err := l.w.rotate(ctx, nil, TriggerShutdown)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && hard.Err() == nil && l.dlqErr.get() == nil {
		// The step's own time ran out (not hard, which ends when
		// another dataset's loop failed), and only in the offset
		// commit: the rotation's files are ready, durable and renamed
		// before it without a deadline (writer.go), and a dead-letter
		// write that failed stays an error. The commit's attempts are
		// counted by commit (offsets.go).
		log.Warn("offsets not committed within the release step's time: the ready files stay for the next start's recovery, and the drain goes on",
			"dataset", l.ds.Name, "step_timeout", releaseTimeout(l.c.cfg.DrainTimeout()).String(), "err", err)
		err = nil
	}
	// What the rotation did not commit is left to recovery: the revoke
	// that Close calls must not try again, nor wait for a broker.
	l.failed.Store(true)
	l.cl.AllowRebalance()
	// Close leaves the group, unless the client is stuck (a recreated
	// topic, a broker that does not answer): the stop must not wait for
	// it beyond this step's budget. A Close still running then ends with
	// the process; the group frees the partitions at the session's end.
	closed := make(chan struct{})
	go func() {
		l.cl.Close()
		close(closed)
	}()
	deadline, _ := ctx.Deadline()
	select {
	case <-closed:
	case <-time.After(max(time.Until(deadline), time.Second)):
		log.Warn("leaving the consumer group timed out: its session's expiry frees the partitions", "dataset", l.ds.Name)
	}
	if err != nil {
		return fmt.Errorf("dataset %s: release: %w", l.ds.Name, err)
	}
	log.Info("partitions released", "dataset", l.ds.Name)
	select {
	case err := <-l.fatal:
		return err
	default:
	}
	return nil
}

// errOnce keeps the first error of asynchronous writes.
type errOnce struct {
	mu  sync.Mutex
	err error
}

func (e *errOnce) set(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *errOnce) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (l *loop) assigned(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	// The ledgers of the new partitions' commits are carried forward by
	// this instance's commits; without them it must not commit at all.
	if err := l.loadLedgers(ctx, cl, m[l.ds.Topic]); err != nil {
		l.raise(fmt.Errorf("dataset %s: read the commit ledgers of partitions %v: %w", l.ds.Name, m[l.ds.Topic], err))
	}
	n := len(m[l.ds.Topic])
	l.owned.Add(int64(n))
	l.c.m.assigned.WithLabelValues(l.ds.Name).Add(float64(n))
	l.c.log.Info("partitions assigned", "dataset", l.ds.Name, "topic", l.ds.Topic, "partitions", m[l.ds.Topic])
}

// revoked rotates and commits the partitions Kafka is taking away, before
// the rebalance completes. It is also called with an empty map at the end
// of each cooperative rebalance: a no-op then.
func (l *loop) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	ps := m[l.ds.Topic]
	if len(ps) == 0 || l.failed.Load() {
		return
	}
	l.owned.Add(-int64(len(ps)))
	l.c.m.assigned.WithLabelValues(l.ds.Name).Sub(float64(len(ps)))
	// Bounded: a commit that cannot land (the broker gone, the group
	// moved on) must not hold the group's rebalance, and this loop, for
	// ever; the error is fatal and recovery decides about the files.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revokeTimeout)
	defer cancel()
	if err := l.w.rotate(rctx, ps, TriggerRevoke); err != nil {
		// The group expelled this member before the revoke's commit
		// landed: every partition is handled as recovery would, and the
		// poll loop carries on (rejoin.go).
		if commitVoided(err) {
			err = l.dropGeneration(rctx, err)
		}
		if err != nil {
			l.raise(fmt.Errorf("dataset %s: rotate revoked partitions %v: %w", l.ds.Name, ps, err))
		}
		return
	}
	l.w.forget(ps)
	l.c.log.Info("partitions revoked", "dataset", l.ds.Name, "partitions", ps)
}

// revokeTimeout bounds the rotation and commit of revoked partitions:
// three rebalance timeouts, after which the group has expelled this member
// anyway.
const revokeTimeout = 15 * time.Second

// lost drops what was written for partitions lost without a revoke (the
// session expired): another member may already own them, so committing
// would be wrong; the records are read again from the committed offset.
func (l *loop) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	ps := m[l.ds.Topic]
	if len(ps) == 0 {
		return
	}
	l.owned.Add(-int64(len(ps)))
	l.c.m.assigned.WithLabelValues(l.ds.Name).Sub(float64(len(ps)))
	if l.failed.Load() {
		// The loop ended after a fatal error or a release whose offset
		// commit ran out of time, and that commit may have landed
		// unanswered: deleting its ready files here could lose their
		// rows. Nothing more is written; the next start's recovery keeps
		// or deletes each file by the committed offsets.
		l.c.log.Warn("partitions lost while stopping: their files stay for the next start's recovery", "dataset", l.ds.Name, "partitions", ps)
		return
	}
	if err := l.w.discard(ps); err != nil {
		l.raise(fmt.Errorf("dataset %s: discard lost partitions %v: %w", l.ds.Name, ps, err))
	}
	l.c.log.Warn("partitions lost", "dataset", l.ds.Name, "partitions", ps)
}

func (l *loop) raise(err error) {
	select {
	case l.fatal <- err:
	default:
	}
}

// fetchMaxBytes bounds one fetch response of a dataset's Kafka client: a
// sixteenth of the memory budget shared by the datasets, between 1 MiB
// and franz-go's default of 50 MiB. franz-go buffers one response per
// broker until it is polled, and a partition's first batch is returned
// even when larger, so progress never stalls on the bound.
func fetchMaxBytes(budget int64, datasets int) int32 {
	const lo, hi = 1 << 20, 50 << 20
	if budget <= 0 {
		return hi
	}
	return int32(min(max(budget/16/int64(max(datasets, 1)), lo), hi))
}
