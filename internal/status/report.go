package status

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/redact"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/walfile"
)

// Process states.
const (
	// StateUp: the process's endpoint answered.
	StateUp = "up"
	// StateDown: it did not.
	StateDown = "down"
)

// Report is one look at a running ingestor. Fields that could not be
// known, because the process that tells them is down, are null in JSON.
type Report struct {
	// Time is when the report was made.
	Time time.Time `json:"time"`
	// Config is the configuration file's path.
	Config string `json:"config,omitempty"`
	// WALDir is the WAL directory.
	WALDir string `json:"wal_dir"`
	// WALError says why the WAL directory could not be read.
	WALError string `json:"wal_error,omitempty"`
	// Volume is the WAL volume's use.
	Volume Volume `json:"wal_volume"`
	// Processes are the supervisor and the three roles, in that order.
	Processes []Process `json:"processes"`
	// Datasets are the configured datasets, in configuration order.
	Datasets []Dataset `json:"datasets"`
	// OtherWAL counts WAL files of topics no dataset reads.
	OtherWAL *WALStates `json:"other_wal,omitempty"`
}

// Volume is how full the WAL volume is and what the consumer does about it.
type Volume struct {
	// UsedPct is the volume's use in percent, as df counts it, measured
	// now; null if the directory cannot be measured.
	UsedPct *float64 `json:"used_pct"`
	// ConsumerUsedPct is the use the consumer measured last (every 5 s).
	ConsumerUsedPct *float64 `json:"consumer_used_pct"`
	// HighWatermarkPct is where consumption pauses.
	HighWatermarkPct float64 `json:"high_watermark_pct"`
	// ResumeBelowPct is where it resumes.
	ResumeBelowPct float64 `json:"resume_below_pct"`
	// Paused tells whether the consumer paused consumption; null when the
	// consumer is down.
	Paused *bool `json:"paused"`
	// PausedReasons are why: wal_volume_above_high_watermark, operator
	// (an operator paused one dataset or more; see Dataset.OperatorPause).
	PausedReasons []string `json:"paused_reasons,omitempty"`
}

// Process is one process of the ingestor as its endpoint and the
// supervisor see it.
type Process struct {
	// Name is supervisor, consumer, uploader or committer.
	Name string `json:"name"`
	// Address is its metrics endpoint.
	Address string `json:"address"`
	// State is StateUp or StateDown.
	State string `json:"state"`
	// Error says why a process is down.
	Error string `json:"error,omitempty"`
	// PID is the process id a role reported.
	PID int `json:"pid,omitempty"`
	// SupervisorUp is the supervisor's ingestor_supervisor_role_up for a
	// role; null when no supervisor answers (sidecar layout, or it is down).
	SupervisorUp *bool `json:"supervisor_up"`
	// Restarts is the supervisor's count of the role's restarts.
	Restarts *float64 `json:"restarts"`
	// UptimeSeconds is how long the process has run, as the supervisor
	// tells of itself and of its children; null when no supervisor
	// answers.
	UptimeSeconds *float64 `json:"uptime_seconds"`
}

// Dataset is what the report tells of one dataset.
type Dataset struct {
	// Name, Topic and Table are the dataset's, from the configuration.
	Name  string `json:"name"`
	Topic string `json:"topic"`
	Table string `json:"table"`
	// Paused: the dataset's Kafka consumer is paused.
	Paused *bool `json:"paused"`
	// PausedReasons are why, as the consumer's metric tells: disk (the WAL
	// volume is above its high watermark), operator (ingestor pause).
	PausedReasons []string `json:"paused_reasons,omitempty"`
	// OperatorPause is an operator's pause of the dataset, as the pause
	// record has it; nil when no operator paused it.
	OperatorPause *OperatorPause `json:"operator_pause"`
	// EventsPerSecond is the rate of records consumed between the two
	// scrapes.
	EventsPerSecond *float64 `json:"events_per_second"`
	// Lag is the records behind the high watermark per partition, as of
	// the consumer's last fetch; LagTotal adds them up.
	Lag      []PartitionLag `json:"lag"`
	LagTotal *float64       `json:"lag_total"`
	// Dropped counts the records dropped since the consumer started, by
	// reason; DroppedTotal adds them up.
	Dropped      map[string]float64 `json:"dropped"`
	DroppedTotal *float64           `json:"dropped_total"`
	// SegmentsOpen counts the open segments.
	SegmentsOpen *float64 `json:"segments_open"`
	// Stalled lists the problems the consumer's watchdog sees now
	// (unassigned, no_progress, topic_recreated); empty when none, null
	// when the consumer is down.
	Stalled []string `json:"stalled"`
	// UnassignedPartitions counts the topic's partitions no member of the
	// group owns, as the watchdog last saw them.
	UnassignedPartitions *float64 `json:"unassigned_partitions"`
	// WAL counts the dataset's WAL files and bytes by state.
	WAL WALStates `json:"wal"`
	// PendingUpload is the uploader's count of ready files without marker.
	PendingUpload *float64 `json:"pending_upload"`
	// LastCommit is the time of the last commit since the committer
	// started; LastCommitAgeSeconds how long ago that was.
	LastCommit           *time.Time `json:"last_commit"`
	LastCommitAgeSeconds *float64   `json:"last_commit_age_seconds"`
	// LastCommitError is the committer's last failed attempt, if any.
	LastCommitError *CommitError `json:"last_commit_error"`
	// Upkeep is the table's health as of the maintainer's last pass; nil
	// while the maintainer is down or switched off.
	Upkeep *Upkeep `json:"upkeep"`
}

// Upkeep is the table's health as the maintainer last saw it.
type Upkeep struct {
	// Snapshots is the number of snapshots the table keeps.
	Snapshots *float64 `json:"snapshots"`
	// MetadataBytes is the size of the current metadata.json.
	MetadataBytes *float64 `json:"metadata_bytes"`
	// Manifests is the number of data manifests in the current snapshot.
	Manifests *float64 `json:"manifests"`
	// DataFiles is the number of live data files.
	DataFiles *float64 `json:"data_files"`
	// SnapshotsExpired counts the snapshots expired since the maintainer
	// started.
	SnapshotsExpired *float64 `json:"snapshots_expired"`
	// SmallFiles is the number of files under half the target size that
	// wait for compaction.
	SmallFiles *float64 `json:"small_files"`
	// CompactionsWaiting is the number of the maintainer's compactions
	// written and waiting for the committer to commit their replace.
	CompactionsWaiting *float64 `json:"compactions_waiting"`
	// RewrittenBytes counts the bytes compaction rewrote since the
	// maintainer started: the write amplification's numerator.
	RewrittenBytes *float64 `json:"rewritten_bytes"`
	// DeleteFiles is the number of live delete files (position, equality,
	// deletion vectors), PartitionDeleteFiles those of the partition with
	// the most, DeletedRows their records: what every read applies until
	// compaction resolves them. DeletesApplied counts the rows compaction
	// left out of its files for their deletes since the maintainer
	// started.
	DeleteFiles          *float64 `json:"delete_files"`
	PartitionDeleteFiles *float64 `json:"partition_delete_files_max"`
	DeletedRows          *float64 `json:"deleted_rows"`
	DeletesApplied       *float64 `json:"deletes_applied"`
	// StepFailures counts the failed upkeep steps since the maintainer
	// started, by step.
	StepFailures map[string]float64 `json:"step_failures"`
}

// PartitionLag is one partition's lag.
type PartitionLag struct {
	// Partition is the Kafka partition.
	Partition int `json:"partition"`
	// Records is how many records it is behind.
	Records float64 `json:"records"`
}

// WALStates counts WAL files by state.
type WALStates struct {
	// Active counts open segments, Ready closed ones, Uploaded the
	// markers of uploaded ones.
	Active   FileCount `json:"active"`
	Ready    FileCount `json:"ready"`
	Uploaded FileCount `json:"uploaded"`
	// Quarantined counts the files moved to the quarantine directory:
	// their rows are in no table and must be replayed (`wal ls` lists
	// them with their offsets).
	Quarantined FileCount `json:"quarantined"`
}

// FileCount is a number of files and their bytes.
type FileCount struct {
	// Files is the number of files.
	Files int `json:"files"`
	// Bytes is their size.
	Bytes int64 `json:"bytes"`
}

// CommitError is a failed commit attempt as the committer reports it; the
// report shows it as it came, secrets masked again.
type CommitError = rolestatus.CommitError

// Options tune a Collector.
type Options struct {
	// ConfigPath is shown in the report.
	ConfigPath string
	// Interval separates the two scrapes a first report takes to measure
	// events per second. Default 1s.
	Interval time.Duration
	// Timeout bounds each request to a process. Default 2s.
	Timeout time.Duration
	// Client makes the requests. Default: a client of its own.
	Client *http.Client
}

// Collector makes reports about the ingestor a configuration describes.
// It keeps the previous scrape, so that each report's rates cover the time
// since the previous report. It is not safe for concurrent use.
type Collector struct {
	cfg   *config.Config
	opts  Options
	red   *redact.Redactor
	prev  map[string]*probe
	procs []string
}

// NewCollector returns a Collector for cfg.
func NewCollector(cfg *config.Config, opts Options) *Collector {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	procs := append([]string{metrics.Supervisor}, role.All...)
	if cfg.Maintenance.Enabled {
		procs = append(procs, role.Maintainer)
	}
	return &Collector{
		cfg:   cfg,
		opts:  opts,
		red:   redact.New(cfg),
		procs: procs,
	}
}

// Redactor is the collector's redactor, for the output's last pass.
func (c *Collector) Redactor() *redact.Redactor { return c.red }

// probe is what one process answered at one moment.
type probe struct {
	addr    string
	at      time.Time
	err     error
	metrics samples
	status  *rolestatus.Status
}

func (p *probe) up() bool { return p != nil && p.err == nil }

// probeAll asks every process at once.
func (c *Collector) probeAll(ctx context.Context) map[string]*probe {
	out := make(map[string]*probe, len(c.procs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range c.procs {
		wg.Go(func() {
			p := c.probe(ctx, name)
			mu.Lock()
			out[name] = p
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (c *Collector) probe(ctx context.Context, name string) *probe {
	p := &probe{}
	addr, err := metrics.RoleAddress(c.cfg, name)
	if err != nil {
		p.err = err
		return p
	}
	p.addr = dialAddress(addr)
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		p.err = fmt.Errorf("metrics address %s has port 0, so the port the process took is not known: set metrics.address or metrics.roles.%s", addr, name)
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	p.metrics, p.err = scrapeMetrics(ctx, c.opts.Client, p.addr)
	p.at = time.Now()
	if p.err != nil {
		return p
	}
	// A role that serves metrics but no status (an older binary) is up all
	// the same; what it cannot tell is left unknown.
	if st, err := fetchStatus(ctx, c.opts.Client, p.addr); err == nil {
		p.status = st
	}
	return p
}

// dialAddress turns a listen address into one to connect to: an empty or
// unspecified host means this machine.
func dialAddress(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Collect makes a report. The first report of a Collector scrapes twice,
// Interval apart, to measure rates; later ones compare with the previous
// report's scrape.
func (c *Collector) Collect(ctx context.Context) (*Report, error) {
	if c.prev == nil {
		c.prev = c.probeAll(ctx)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(c.opts.Interval):
		}
	}
	cur := c.probeAll(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := c.build(cur, c.prev, time.Now())
	c.prev = cur
	return r, nil
}

// build makes the report from the current and the previous probes.
func (c *Collector) build(cur, prev map[string]*probe, now time.Time) *Report {
	wal := c.cfg.Ingestion.WAL
	r := &Report{
		Time:   now.UTC(),
		Config: c.opts.ConfigPath,
		WALDir: wal.Dir,
		Volume: Volume{
			HighWatermarkPct: wal.DiskHighWatermarkPct,
			ResumeBelowPct:   wal.DiskHighWatermarkPct - 5,
		},
	}
	if pct, err := volumeUsedPct(wal.Dir); err == nil {
		r.Volume.UsedPct = &pct
	}

	sup := cur[metrics.Supervisor]
	for _, name := range c.procs {
		p := cur[name]
		proc := Process{Name: name, Address: p.addr, State: StateDown}
		if p.up() {
			proc.State = StateUp
			if p.status != nil {
				proc.PID = p.status.PID
			}
		} else {
			proc.Error = c.red.String(describe(p.err))
		}
		if d := details(sup).Supervisor; d != nil {
			if name == metrics.Supervisor {
				proc.UptimeSeconds = ptr(d.UptimeSeconds)
			} else if ch, ok := d.Children[name]; ok && ch.UptimeSeconds != nil {
				proc.UptimeSeconds = ptr(*ch.UptimeSeconds)
			}
		}
		if name != metrics.Supervisor && sup.up() {
			if v, ok := sup.metrics.sum("ingestor_supervisor_role_up", map[string]string{"role": name}); ok {
				proc.SupervisorUp = ptr(v > 0)
			}
			if v, ok := sup.metrics.sum("ingestor_supervisor_role_restarts_total", map[string]string{"role": name}); ok {
				proc.Restarts = ptr(v)
			}
		}
		r.Processes = append(r.Processes, proc)
	}

	cons, upl, com := cur[role.Consumer], cur[role.Uploader], cur[role.Committer]
	if cons.up() {
		if v, ok := cons.metrics.sum("ingestor_consumer_wal_volume_used_ratio", nil); ok {
			r.Volume.ConsumerUsedPct = ptr(v * 100)
		}
		if d := details(cons).Consumer; d != nil {
			r.Volume.Paused = ptr(d.Paused)
			for _, s := range d.PausedReasons {
				r.Volume.PausedReasons = append(r.Volume.PausedReasons, c.red.String(s))
			}
		}
		if r.Volume.Paused == nil {
			paused := false
			for _, s := range cons.metrics["ingestor_consumer_paused"] {
				paused = paused || s.value > 0
			}
			r.Volume.Paused = &paused
		}
	}

	files, err := walfile.List(wal.Dir)
	if err != nil {
		r.WALError = c.red.String(err.Error())
	}
	byTopic := map[string]*WALStates{}
	for _, f := range files {
		st := byTopic[f.Topic]
		if st == nil {
			st = &WALStates{}
			byTopic[f.Topic] = st
		}
		var fc *FileCount
		switch f.State {
		case walfile.Active:
			fc = &st.Active
		case walfile.Ready:
			fc = &st.Ready
		case walfile.Uploaded:
			fc = &st.Uploaded
		default:
			continue
		}
		fc.Files++
		fc.Bytes += f.Size
	}
	notes, err := walfile.ListQuarantine(wal.Dir)
	if err != nil && r.WALError == "" {
		r.WALError = c.red.String(err.Error())
	}
	for _, n := range notes {
		st := byTopic[n.Topic]
		if st == nil {
			st = &WALStates{}
			byTopic[n.Topic] = st
		}
		st.Quarantined.Files++
		if info, err := os.Stat(filepath.Join(wal.Dir, walfile.QuarantineDir, n.File)); err == nil {
			st.Quarantined.Bytes += info.Size()
		}
	}

	pauses, err := operatorPauses(sup, cons, wal.Dir)
	if err != nil && r.WALError == "" {
		r.WALError = c.red.String(err.Error())
	}
	for _, d := range c.cfg.Datasets {
		ds := Dataset{Name: d.Name, Topic: d.Topic, Table: d.Table, Dropped: map[string]float64{}, Lag: []PartitionLag{}}
		if e, ok := pauses[d.Name]; ok {
			ds.OperatorPause = &OperatorPause{By: c.red.String(e.By), Reason: c.red.String(e.Reason), Since: e.Since.UTC(), AgeSeconds: now.Sub(e.Since).Seconds()}
		}
		if st := byTopic[d.Topic]; st != nil {
			ds.WAL = *st
			delete(byTopic, d.Topic)
		}
		match := map[string]string{"dataset": d.Name}
		if cons.up() {
			c.consumerView(&ds, cons, prev[role.Consumer], match)
		}
		if upl.up() {
			if v, ok := upl.metrics.sum("ingestor_uploader_pending_files", match); ok {
				ds.PendingUpload = ptr(v)
			}
		}
		if com.up() {
			if ts, ok := com.metrics.sum("ingestor_committer_last_commit_timestamp_seconds", match); ok && ts > 0 {
				at := time.Unix(0, int64(ts*float64(time.Second))).UTC()
				ds.LastCommit = &at
				ds.LastCommitAgeSeconds = ptr(now.Sub(at).Seconds())
			}
			ds.LastCommitError = c.commitError(com, d.Name, now)
		}
		if mnt := cur[role.Maintainer]; mnt.up() {
			ds.Upkeep = upkeepView(mnt, match)
		}
		r.Datasets = append(r.Datasets, ds)
	}
	if len(byTopic) > 0 {
		other := &WALStates{}
		for _, st := range byTopic {
			other.Active.add(st.Active)
			other.Ready.add(st.Ready)
			other.Uploaded.add(st.Uploaded)
			other.Quarantined.add(st.Quarantined)
		}
		r.OtherWAL = other
	}
	return r
}

// upkeepView reads a dataset's table health from the maintainer's metrics.
func upkeepView(mnt *probe, match map[string]string) *Upkeep {
	u := &Upkeep{StepFailures: map[string]float64{}}
	for name, dst := range map[string]**float64{
		"ingestor_maintainer_snapshots":                  &u.Snapshots,
		"ingestor_maintainer_metadata_bytes":             &u.MetadataBytes,
		"ingestor_maintainer_manifests":                  &u.Manifests,
		"ingestor_maintainer_data_files":                 &u.DataFiles,
		"ingestor_maintainer_snapshots_expired_total":    &u.SnapshotsExpired,
		"ingestor_maintainer_small_files":                &u.SmallFiles,
		"ingestor_maintainer_compactions_waiting":        &u.CompactionsWaiting,
		"ingestor_maintainer_rewritten_bytes_total":      &u.RewrittenBytes,
		"ingestor_maintainer_delete_files":               &u.DeleteFiles,
		"ingestor_maintainer_partition_delete_files_max": &u.PartitionDeleteFiles,
		"ingestor_maintainer_deleted_rows":               &u.DeletedRows,
		"ingestor_maintainer_deletes_applied_total":      &u.DeletesApplied,
	} {
		if v, ok := mnt.metrics.sum(name, match); ok {
			*dst = ptr(v)
		}
	}
	for _, st := range []string{"load", "expire", "manifests", "compact"} {
		if v, ok := mnt.metrics.sum("ingestor_maintainer_step_failures_total", map[string]string{"dataset": match["dataset"], "step": st}); ok && v > 0 {
			u.StepFailures[st] = v
		}
	}
	return u
}

func (f *FileCount) add(o FileCount) {
	f.Files += o.Files
	f.Bytes += o.Bytes
}

// consumerView fills what the consumer's metrics tell of a dataset.
func (c *Collector) consumerView(ds *Dataset, cons, prev *probe, match map[string]string) {
	m := cons.metrics
	if v, ok := m.sum("ingestor_consumer_paused", match); ok {
		ds.Paused = ptr(v > 0)
	} else {
		ds.Paused = ptr(false)
	}
	for reason, v := range m.by("ingestor_consumer_paused", "reason", match) {
		if v > 0 && reason != "" {
			ds.PausedReasons = append(ds.PausedReasons, reason)
		}
	}
	sort.Strings(ds.PausedReasons)
	var lagTotal float64
	for p, v := range m.by("ingestor_consumer_lag_records", "partition", match) {
		n, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		ds.Lag = append(ds.Lag, PartitionLag{Partition: n, Records: v})
		lagTotal += v
	}
	sort.Slice(ds.Lag, func(i, j int) bool { return ds.Lag[i].Partition < ds.Lag[j].Partition })
	ds.LagTotal = ptr(lagTotal)
	var dropped float64
	for reason, v := range m.by("ingestor_consumer_records_dropped_total", "reason", match) {
		ds.Dropped[c.red.String(reason)] = v
		dropped += v
	}
	ds.DroppedTotal = ptr(dropped)
	if v, ok := m.sum("ingestor_consumer_segments_open", match); ok {
		ds.SegmentsOpen = ptr(v)
	} else {
		ds.SegmentsOpen = ptr(0.0)
	}
	ds.Stalled = []string{}
	for reason, v := range m.by("ingestor_consumer_stalled", "reason", match) {
		if v > 0 {
			ds.Stalled = append(ds.Stalled, reason)
		}
	}
	sort.Strings(ds.Stalled)
	if v, ok := m.sum("ingestor_consumer_unassigned_partitions", match); ok {
		ds.UnassignedPartitions = ptr(v)
	} else {
		ds.UnassignedPartitions = ptr(0.0)
	}
	// Events per second over the time between the two scrapes; a counter
	// that went down means the consumer restarted in between: unknown.
	if prev.up() && cons.at.After(prev.at) {
		now, _ := m.sum("ingestor_consumer_records_total", match)
		before, _ := prev.metrics.sum("ingestor_consumer_records_total", match)
		if now >= before {
			ds.EventsPerSecond = ptr((now - before) / cons.at.Sub(prev.at).Seconds())
		}
	}
}

// commitError reads a dataset's last commit error from the committer's
// status; its texts pass through the redactor.
func (c *Collector) commitError(com *probe, dataset string, now time.Time) *CommitError {
	d := details(com).Committer
	if d == nil {
		return nil
	}
	le := d.Datasets[dataset].LastError
	if le == nil {
		return nil
	}
	e := &CommitError{Reason: c.red.String(le.Reason), Step: c.red.String(le.Step), Error: c.red.String(le.Error)}
	if !le.Time.IsZero() {
		e.Time = le.Time.UTC()
		e.AgeSeconds = now.Sub(le.Time).Seconds()
	}
	return e
}

// details is the body a process's status holds; empty when it is down or
// told none.
func details(p *probe) rolestatus.Details {
	if p == nil || p.status == nil {
		return rolestatus.Details{}
	}
	return p.status.Details
}

// describe shortens the error of a process that did not answer.
func describe(err error) string {
	if err == nil {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno == syscall.ECONNREFUSED {
		return "connection refused"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return err.Error()
}

// volumeUsedPct is how full the file system holding dir is, in percent,
// as df counts it (and as the consumer does).
func volumeUsedPct(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	used := float64(st.Blocks - st.Bfree)
	total := used + float64(st.Bavail)
	if total == 0 {
		return 0, nil
	}
	return 100 * used / total, nil
}

func ptr[T any](v T) *T { return &v }
