package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/icewal/ingestor/shared/config"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage/file"
)

// SoakOptions are the soak run's defaults (`ingestor bench --soak-commits
// N`): a day of production commits fast-forwarded, as issue 12 measured
// it: 16 tenants over 4 Kafka partitions at 5,000 events/s, a commit every
// 0.18 s of files rotated after 0.6 s. Upkeep is fast-forwarded alike: a
// maintainer pass every 0.54 s is the default 60 s at the default 20 s
// commit interval, three commits a pass, so that compaction meets the
// day's files at the pace it would.
func SoakOptions() Options {
	o := DefaultOptions()
	o.Events = 0
	o.Rate = 5000
	o.Tenants = 16
	o.Partitions = 4
	o.CommitIntervalSeconds = 0.18
	o.MaxFileAgeMinutes = 0.01
	o.MaintenanceIntervalSeconds = math.Round(1000*config.DefaultMaintenanceIntervalSeconds*o.CommitIntervalSeconds/config.DefaultCommitIntervalSeconds) / 1000
	// The default 15 minutes of maintenance.idleCompactionMinutes,
	// fast-forwarded alike: 8.1 s.
	o.IdleCompactionMinutes = math.Round(1000*config.DefaultMaintenanceIdleCompactionMinutes*o.CommitIntervalSeconds/config.DefaultCommitIntervalSeconds) / 1000
	o.SoakCheckpoints = 10
	o.Timeout = 6 * time.Hour
	return o
}

// rewrittenMetric is the maintainer's count of the bytes it rewrote; the
// soak run prefers it to the snapshots' summaries where a role exports it.
const rewrittenMetric = "ingestor_maintainer_rewritten_bytes_total"

// soakState is what a soak run gathers between checkpoints.
type soakState struct {
	log       string    // the ingestor's log, read for "committed" lines
	read      int64     // bytes of log read so far
	rest      []byte    // a partial last line of log
	durations []float64 // each append's duration in ms, in order
	windowAt  int       // durations[windowAt:] are since the last checkpoint
	ledger    writeLedger
	metric    float64 // rewrittenMetric, -1 while no role exports it
	points    []Health
	settle    time.Duration // settleUpkeep's wait after the idle time
	settled   bool          // whether upkeep caught up within it
}

// soak follows the committer until it has made o.SoakCommits appends,
// taking the table's health every o.SoakCommits/o.SoakCheckpoints
// appends. It returns with the generator stopped (stop) and waited for
// (done), whatever the outcome.
func (b *runner) soak(ctx context.Context, t0 time.Time, stop func(), done <-chan error) (err error) {
	genDone := false
	defer func() {
		if !genDone {
			stop()
			if genErr := <-done; genErr != nil && err == nil {
				err = fmt.Errorf("generator: %w", genErr)
			}
		}
	}()
	st := &soakState{log: b.logf.Name(), metric: -1}
	b.soakState = st
	step := max(b.o.SoakCommits/max(b.o.SoakCheckpoints, 1), 1)
	next := step
	lastLine := time.Now()
	for {
		if err := st.readDurations(); err != nil {
			return err
		}
		n := len(st.durations)
		if n >= next || n >= b.o.SoakCommits {
			if err := b.checkpoint(ctx, t0, false); err != nil {
				return err
			}
			for next <= n {
				next += step
			}
		}
		if n >= b.o.SoakCommits {
			break
		}
		if time.Since(lastLine) >= 10*time.Second {
			lastLine = time.Now()
			b.say("%4.0fs soak: %d of %d commits", time.Since(t0).Seconds(), n, b.o.SoakCommits)
		}
		select {
		case err := <-done:
			genDone = true
			return fmt.Errorf("the generator stopped before %d commits: %v", b.o.SoakCommits, err)
		default:
		}
		if err := b.sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint takes the table's health now and records it; the last one
// also times a full scan of the table.
func (b *runner) checkpoint(ctx context.Context, t0 time.Time, last bool) error {
	st := b.soakState
	if err := st.readDurations(); err != nil {
		return err
	}
	if m, ok := b.scrapeRewritten(ctx); ok {
		st.metric = m
	}
	tbl, err := b.cat.LoadTable(ctx, table.Identifier(b.cfg.Datasets[0].TableIdent()))
	if err != nil {
		return fmt.Errorf("load table: %w", err)
	}
	part := tenantHour{tenant: b.ten.Name(0), hour: t0.UTC().Truncate(time.Hour)}
	h, err := tableHealth(ctx, tbl, b.listBlobs, part)
	if err != nil {
		return err
	}
	// An upsert run's scorer scans the whole table anyway, and its scan
	// stands for this one.
	if last && b.lww == nil {
		rows, took, err := fullScan(ctx, tbl)
		if err != nil {
			return err
		}
		h.FullScanRows, h.FullScanMs = rows, round(float64(took.Microseconds())/1e3, 1)
		b.say("full scan of the table: %d rows in %.0f ms; %d delete files (%d equality, %d position; %.1f per partition, max %d) holding %d rows",
			rows, h.FullScanMs, h.DeleteFiles, h.EqualityDeleteFiles, h.PositionDeleteFiles, h.DeleteFilesPerPartition, h.DeleteFilesMaxPerPartition, h.DeleteRows)
	}
	h.Commits = len(st.durations)
	h.Seconds = round(time.Since(t0).Seconds(), 1)
	window := slices.Clone(st.durations[st.windowAt:])
	st.windowAt = len(st.durations)
	slices.Sort(window)
	h.CommitsInWindow = len(window)
	h.CommitP50Ms, h.CommitP95Ms = quantile(window, 0.5), quantile(window, 0.95)
	st.ledger.add(tbl)
	st.ledger.fill(h, st.metric)
	st.points = append(st.points, *h)
	b.say("checkpoint %d commits: metadata.json %d B, metadata dir %d B (%d files), %d manifests, %d data files (p50 %d B, %d small, max %d in a partition; %.1f files per partition of %d, max %d; %.1f %% small), %d delete files (max %d in a partition), commit p50/p95 %.0f/%.0f ms, scan plan table %.0f ms, %s %.0f ms, write amplification %.2f",
		h.Commits, h.MetadataJSONBytes, h.MetadataDirBytes, h.MetadataDirFiles, h.Manifests, h.DataFiles,
		h.FileSizeBytes["p50"], h.SmallFiles, h.SmallFilesMaxPerPartition, h.FilesPerPartition, h.Partitions, h.FilesMaxPerPartition, h.SmallFilesPct, h.DeleteFiles, h.DeleteFilesMaxPerPartition, h.CommitP50Ms, h.CommitP95Ms,
		h.ScanPlanTableMs, h.ScanPartition, h.ScanPlanPartitionMs, h.WriteAmplification)
	return nil
}

// listBlobs lists the run's objects under location: Azurite's, or on
// StorageFile the files under the location's directory.
func (b *runner) listBlobs(ctx context.Context, location string) ([]object, error) {
	if b.azurite == nil {
		return listFiles(location)
	}
	blobs, err := b.azurite.ListBlobs(ctx, location)
	if err != nil {
		return nil, err
	}
	out := make([]object, len(blobs))
	for i, bl := range blobs {
		out[i] = object{path: bl.Location, size: bl.Size}
	}
	return out, nil
}

// listFiles lists the files under a file:// location, with their sizes; a
// directory not made yet holds nothing.
func listFiles(location string) ([]object, error) {
	dir, err := file.Path(location)
	if err != nil {
		return nil, err
	}
	var out []object
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case d.IsDir():
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted since the directory was read
		} else if err != nil {
			return err
		}
		out = append(out, object{path: (&url.URL{Scheme: "file", Path: path}).String(), size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", location, err)
	}
	return out, nil
}

// scrapeRewritten reads the maintainer's rewritten-bytes counter: false
// when no maintainer exports it (a run with maintenance switched off).
func (b *runner) scrapeRewritten(ctx context.Context) (float64, bool) {
	var total float64
	found := false
	// The counter is the maintainer's; where the run has none, nothing
	// listens there and the snapshots' summaries stand in.
	addr, err := metrics.RoleAddress(b.cfg, role.Maintainer)
	if err != nil {
		return 0, false
	}
	addrs := []string{addr}
	for _, addr := range addrs {
		if addr == "" {
			continue
		}
		s, err := devenv.Scrape(ctx, addr)
		if err != nil {
			continue
		}
		for k := range s {
			if base, _, _ := strings.Cut(k, "{"); base == rewrittenMetric {
				found = true
			}
		}
		total += s.Sum(rewrittenMetric)
	}
	return total, found
}

// readDurations reads the log lines written since the last call and keeps
// the duration of each append the committer logged ("committed").
func (st *soakState) readDurations() error {
	f, err := os.Open(st.log)
	if err != nil {
		return fmt.Errorf("read the ingestor log: %w", err)
	}
	defer f.Close()
	chunk, err := io.ReadAll(io.NewSectionReader(f, st.read, 1<<62))
	if err != nil {
		return fmt.Errorf("read the ingestor log: %w", err)
	}
	st.read += int64(len(chunk))
	data := append(st.rest, chunk...)
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		st.rest = data
		return nil
	}
	st.rest = slices.Clone(data[i+1:])
	st.durations = append(st.durations, commitDurations(data[:i+1])...)
	return nil
}

// commitDurations returns the duration_ms of every "committed" line of
// the committer in log, JSON lines as the supervisor passes them through.
func commitDurations(log []byte) []float64 {
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"committed"`)) {
			continue
		}
		if j := bytes.IndexByte(line, '{'); j > 0 {
			line = line[j:]
		}
		var rec struct {
			Msg        string   `json:"msg"`
			DurationMs *float64 `json:"duration_ms"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "committed" && rec.DurationMs != nil {
			out = append(out, *rec.DurationMs)
		}
	}
	return out
}

// SoakResult is what a soak run adds to the Result.
type SoakResult struct {
	SoakCommits int `json:"soak_commits"`
	// CommitFirst100P50Ms and CommitFirst100P95Ms are the append
	// durations of the first hundred commits, the base the later windows
	// compare with.
	CommitFirst100P50Ms float64 `json:"commit_first100_p50_ms"`
	CommitFirst100P95Ms float64 `json:"commit_first100_p95_ms"`
	// Health is the last checkpoint, taken after the stop; Checkpoints
	// are all of them in order, that one included.
	Health      *Health  `json:"health"`
	Checkpoints []Health `json:"checkpoints"`
	// UpkeepSettleSeconds is how long upkeep took, after the partitions
	// went idle, to go the idle time without compacting anything
	// (settleUpkeep); UpkeepSettled is false when it had not by
	// upkeepSettleLimit.
	UpkeepSettleSeconds float64 `json:"upkeep_settle_seconds"`
	UpkeepSettled       bool    `json:"upkeep_settled"`
}

// result returns the soak run's figures.
func (st *soakState) result(commits int) *SoakResult {
	r := &SoakResult{SoakCommits: commits, Checkpoints: st.points,
		UpkeepSettleSeconds: st.settle.Seconds(), UpkeepSettled: st.settled}
	if len(st.points) > 0 {
		last := st.points[len(st.points)-1]
		r.Health = &last
	}
	first := slices.Clone(st.durations[:min(len(st.durations), 100)])
	slices.Sort(first)
	r.CommitFirst100P50Ms, r.CommitFirst100P95Ms = quantile(first, 0.5), quantile(first, 0.95)
	return r
}

// upkeepSettleLimit bounds settleUpkeep: a maintainer that has not caught
// up by then is reported (UpkeepSettled false), and the run goes on.
const upkeepSettleLimit = 20 * time.Minute

// settleUpkeep waits, once the table holds every event and the
// partitions have gone idle, until upkeep has caught up as it would by
// the end of a quiet evening: no compaction for the idle time (a
// partition that a compaction just rewrote is idle again only that long
// after it) and at least two passes since, with no hand-off waiting for
// the committer. A fixed wait does not do: a pass over an upsert table
// of many commits applies its deletes to whole partitions and takes
// minutes, and a run that stopped in the middle of it would score the
// table upkeep was still working on. It returns how long it waited and
// whether upkeep settled within upkeepSettleLimit.
func (b *runner) settleUpkeep(ctx context.Context, idle time.Duration) (time.Duration, bool, error) {
	addr, err := metrics.RoleAddress(b.cfg, role.Maintainer)
	if err != nil || addr == "" {
		return 0, false, fmt.Errorf("the maintainer's metrics address: %v", err)
	}
	start := time.Now()
	const compact = `step="compact"`
	lastPass, lastRuns := -1.0, -1.0
	changed := start // the last compaction seen, or the start
	passes := 0      // passes finished since then
	for time.Since(start) < upkeepSettleLimit {
		if err := b.sleep(ctx, 500*time.Millisecond); err != nil {
			return time.Since(start), false, err
		}
		s, err := devenv.Scrape(ctx, addr)
		if err != nil {
			continue // a maintainer restarting; its next pass counts
		}
		pass := s.Sum("ingestor_maintainer_last_step_timestamp_seconds", compact)
		runs := s.Sum("ingestor_maintainer_steps_total", compact)
		waiting := s.Sum("ingestor_maintainer_compactions_waiting")
		if runs != lastRuns || waiting > 0 {
			changed, passes = time.Now(), 0
		} else if pass != lastPass {
			passes++
		}
		lastPass, lastRuns = pass, runs
		if passes >= 2 && time.Since(changed) >= idle {
			return time.Since(start), true, nil
		}
	}
	return time.Since(start), false, nil
}
