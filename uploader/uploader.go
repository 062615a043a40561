package uploader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/walfile"
)

// Timing and limits of the uploader (see the package doc).
const (
	// ScanInterval is the time between two full listings of the WAL directory.
	ScanInterval = 5 * time.Second
	// Parallel is the number of uploads that run at once.
	Parallel = 4

	backoffMin = time.Second
	backoffMax = time.Minute
	// logEvery rate-limits failure logs, per dataset.
	logEvery = 30 * time.Second
	// heldPoll is how often the drain checks whether the consumer still
	// holds its lock.
	heldPoll = 100 * time.Millisecond
)

// Uploader stores ready WAL segments and marks them uploaded.
type Uploader struct {
	cfg   *config.Config
	dir   string
	log   *slog.Logger
	m     *metrics
	store storage.Store
	loc   locator

	scanInterval time.Duration
	parallel     int
	backoffMin   time.Duration
	backoffMax   time.Duration
	now          func() time.Time

	wake chan struct{} // a slot freed or a file arrived: scan again

	mu       sync.Mutex
	inflight map[string]bool       // ready file names being uploaded
	queue    []job                 // found by the last scan, waiting for a free slot
	retries  map[string]*retry     // ready file names whose last attempt failed
	logged   map[string]*rateLimit // by dataset
	orphans  *orphanSweeper        // deletes the objects of segments recovery deleted (orphan.go)
}

// retry is the backoff state of a file whose upload failed.
type retry struct {
	next  time.Time
	delay time.Duration
}

// rateLimit keeps one dataset's failure logs to one line per logEvery.
type rateLimit struct {
	last       time.Time
	suppressed int
}

// option changes how New builds the uploader; tests use them.
type option func(*Uploader)

// withLocator replaces the catalog with a fixed answer.
func withLocator(l locator) option { return func(u *Uploader) { u.loc = l } }

// withTiming shortens the scan interval and the backoff.
func withTiming(scan, backoffMin, backoffMax time.Duration) option {
	return func(u *Uploader) { u.scanInterval, u.backoffMin, u.backoffMax = scan, backoffMin, backoffMax }
}

// New builds the uploader of cfg's datasets. Nothing is contacted until Run.
func New(cfg *config.Config, opts role.Options, options ...option) (*Uploader, error) {
	opts = opts.Defaults()
	m, err := newMetrics(opts.Registerer, cfg.Datasets)
	if err != nil {
		return nil, err
	}
	u := &Uploader{
		cfg:          cfg,
		dir:          cfg.Ingestion.WAL.Dir,
		log:          opts.Logger,
		m:            m,
		store:        storage.Open(cfg.Catalog.Properties),
		loc:          newCatalogLocator(cfg.Catalog),
		scanInterval: ScanInterval,
		parallel:     Parallel,
		backoffMin:   backoffMin,
		backoffMax:   backoffMax,
		now:          time.Now,
		wake:         make(chan struct{}, 1),
		inflight:     map[string]bool{},
		retries:      map[string]*retry{},
		logged:       map[string]*rateLimit{},
		orphans:      newOrphanSweeper(opts.Registerer),
	}
	for _, o := range options {
		o(u)
	}
	return u, nil
}

// Run uploads until ctx is cancelled, then drains (see the package doc)
// and returns nil. It returns an error only if it cannot start: another
// uploader holds the WAL directory, or the directory is unreadable.
func (u *Uploader) Run(ctx context.Context) error {
	lock, err := walfile.AcquireLock(u.dir, role.Uploader)
	if err != nil {
		return err
	}
	// Released last: the committer's final pass waits for it.
	defer lock.Release()
	if _, err := walfile.List(u.dir); err != nil {
		return err
	}
	u.finishQuarantine()
	defer u.closeClients()

	events, names, closeWatch := u.watch()
	defer closeWatch()

	// Uploads run under work, which outlives ctx: cancelling ctx starts the
	// drain, and only the drain deadline cancels work.
	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { u.sweepOrphans(ctx) })

	u.run(ctx, work, &wg, events, names)

	deadline := time.AfterFunc(u.cfg.DrainTimeout(), stop)
	defer deadline.Stop()
	u.log.Info("uploader draining", "timeout", u.cfg.DrainTimeout().String())
	u.drain(work, &wg, events, names)
	wg.Wait()
	if work.Err() != nil {
		u.log.Warn("uploader drain deadline passed; the next start uploads what is left", "pending", u.pendingCount())
	} else {
		u.log.Info("uploader drained", "pending", u.pendingCount())
	}
	return nil
}

// run is normal operation: scan at start and every scan interval, and
// upload each ready file the watch names as it appears. A scan also runs
// when the watch missed files, or, without a watch, when a file appears
// or a slot frees with nothing queued.
func (u *Uploader) run(ctx, work context.Context, wg *sync.WaitGroup, events <-chan struct{}, names <-chan string) {
	tick := time.NewTicker(u.scanInterval)
	defer tick.Stop()
	var badNames time.Time
	for {
		if time.Since(badNames) >= badNameEvery {
			u.quarantineBadNames()
			badNames = time.Now()
		}
		u.scan(work, wg, nil)
		if !u.untilScan(ctx, work, wg, tick.C, events, names) {
			return
		}
	}
}

// minScanGap is the least time between two scans that events trigger: a
// rotation renames hundreds of files one after the other, and each
// listing of a large directory costs milliseconds.
const minScanGap = 100 * time.Millisecond

// untilScan uploads the files the watch names (names) until a scan is
// due: at the tick, or when the watch missed files (events), at most once
// per minScanGap for those. Without a watch (names nil) a new file, or a
// slot freed with the files the last scan found all under way, makes the
// scan due too (a burst of thousands of ready files is listed once, not
// once per upload). It returns false when ctx ends.
func (u *Uploader) untilScan(ctx, work context.Context, wg *sync.WaitGroup, tick <-chan time.Time, events <-chan struct{}, names <-chan string) bool {
	scanned := time.Now()
	var soon <-chan time.Time // set when an event arrived too early
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-soon:
			return true
		case base := <-names:
			u.enqueue(work, wg, base)
			continue
		case <-events:
		case <-u.wake:
			if u.dispatch(work, wg) || names != nil {
				continue
			}
		}
		// Files the watch missed, or (without a watch) a new file or a
		// free slot and nothing queued: scan, but not sooner than
		// minScanGap after the last one.
		gap := minScanGap - time.Since(scanned)
		if gap <= 0 {
			return true
		}
		if soon == nil {
			soon = time.After(gap)
		}
	}
}

// enqueue queues the ready file base that the watch named and starts it
// if a slot is free, without listing the directory: a rotation of 1,600
// segments names 1,600 files one after the other, and a listing of such a
// directory takes tens of milliseconds. The file is complete when it is
// named (the consumer renames it to ready_ after its fsync and checksum
// record), and upload checks its marker first, so a file a scan queued
// too is uploaded once. What the watch cannot tell (a name no dataset
// reads, a file in backoff) is left to the next scan.
func (u *Uploader) enqueue(work context.Context, wg *sync.WaitGroup, base string) {
	n, err := walfile.Parse(base)
	if err != nil || n.State != walfile.Ready || work.Err() != nil {
		return
	}
	d, ok := u.cfg.DatasetByTopic(n.Topic)
	if !ok {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.inflight[base] || u.retries[base] != nil {
		return
	}
	for _, j := range u.queue {
		if j.file.Name == n {
			return
		}
	}
	u.queue = append(u.queue, job{file: walfile.File{Name: n, Path: filepath.Join(u.dir, base)}, dataset: d})
	u.dispatchLocked(work, wg, nil)
}

// drain keeps uploading while the consumer holds its lock (it is rotating
// its last segments into ready files), then tries every file without a
// marker once more, backoff or not, and waits for those uploads. work ends
// at the drain deadline.
func (u *Uploader) drain(work context.Context, wg *sync.WaitGroup, events <-chan struct{}, names <-chan string) {
	tick := time.NewTicker(heldPoll)
	defer tick.Stop()
	next := time.Now()
	for walfile.Held(u.dir, role.Consumer) {
		if !time.Now().Before(next) {
			u.scan(work, wg, nil)
			next = time.Now().Add(u.scanInterval)
		}
		select {
		case <-work.Done():
			return
		case <-tick.C:
		case base := <-names:
			u.enqueue(work, wg, base)
		case <-events:
			next = time.Now()
		case <-u.wake:
			next = time.Now()
		}
	}
	// The final pass: the consumer is gone, so no ready file appears any
	// more; each one without a marker gets one more attempt.
	tried := map[string]bool{}
	for {
		if started, waiting := u.scan(work, wg, tried); started == 0 && waiting == 0 && u.inflightCount() == 0 {
			return
		}
		select {
		case <-work.Done():
			return
		case <-u.wake:
		case <-events:
		case <-tick.C:
		}
	}
}

// watchBuffer is how many new ready files the watch holds for the loop
// to take: more than a rotation of the largest partition count makes at
// once. Past it the watch asks for a scan instead.
const watchBuffer = 4096

// watch names new ready_ files of the WAL directory (names), and reports
// on events when it missed some, for a scan to find them. If the watch
// cannot be set up, names is nil and the periodic scan alone finds them.
func (u *Uploader) watch() (events <-chan struct{}, names <-chan string, closeWatch func()) {
	out := make(chan struct{}, 1)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(u.dir)
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		u.log.Warn("cannot watch the WAL directory; relying on the periodic scan", "dir", u.dir, "error", err)
		return out, nil, func() {}
	}
	named := make(chan string, watchBuffer)
	missed := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				base := filepath.Base(ev.Name)
				if ready := u.toUpload(ev.Op, base); ready != "" {
					select {
					case named <- ready:
					default:
						missed()
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflow of the kernel's queue loses events.
				u.log.Warn("WAL directory watch", "dir", u.dir, "error", err)
				missed()
			}
		}
	}()
	return out, named, func() {
		w.Close()
		<-done
	}
}

// toUpload returns the ready file a watch event on base makes due for an
// upload, "" for none:
//
//   - a ready_ file created: a rename to ready_, how the consumer makes
//     one, is a create here;
//   - an uploaded_ marker deleted or moved away while its ready file
//     stays: the committer handed the segment back before its append (its
//     object was missing, of the wrong size or near the orphan margin), or
//     moved a bad marker to the quarantine. The file is uploaded again at
//     once: until its append it is the only copy of its rows. After an
//     append the committer deletes the ready file before its marker, so
//     those deletions find no ready file and cost one stat.
func (u *Uploader) toUpload(op fsnotify.Op, base string) string {
	switch {
	case op.Has(fsnotify.Create) && strings.HasPrefix(base, walfile.ReadyPrefix):
		return base
	case (op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename)) && strings.HasPrefix(base, walfile.UploadedPrefix):
		n, err := walfile.Parse(base)
		if err != nil {
			return ""
		}
		ready := n.As(walfile.Ready).String()
		if _, err := os.Stat(filepath.Join(u.dir, ready)); err != nil {
			return ""
		}
		return ready
	}
	return ""
}

// closeClients drops idle storage and catalog connections at exit.
func (u *Uploader) closeClients() {
	if c, ok := u.store.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	if c, ok := u.loc.(io.Closer); ok {
		if err := c.Close(); err != nil {
			u.log.Warn("close catalog", "error", err)
		}
	}
}

// job is one ready file to upload.
type job struct {
	file    walfile.File
	dataset config.Dataset
}

// scan lists the WAL directory, updates the pending gauge and starts
// uploads of ready files without a marker, as many as free slots allow.
// Files in backoff wait, unless tried is non-nil (the final pass): then
// each file is started at most once, and recorded in tried. It returns how
// many uploads it started and how many startable files wait for a slot.
func (u *Uploader) scan(work context.Context, wg *sync.WaitGroup, tried map[string]bool) (started, waiting int) {
	if work.Err() != nil {
		return 0, 0
	}
	u.m.scans.Inc()
	files, err := walfile.List(u.dir)
	if err != nil {
		u.log.Error("scan WAL directory", "dir", u.dir, "error", err)
		return 0, 0
	}
	marked := map[string]bool{}
	for _, f := range files {
		// An empty marker marks nothing: the upload writes it anew.
		if f.State == walfile.Uploaded && f.Size > 0 {
			marked[f.Name.As(walfile.Ready).String()] = true
		}
	}
	pending := map[string]int{}
	for _, d := range u.cfg.Datasets {
		pending[d.Name] = 0
	}
	now := u.now()
	var todo []job
	seen := map[string]bool{}
	u.mu.Lock()
	for _, f := range files {
		name := f.Name.String()
		if f.State != walfile.Ready || marked[name] {
			continue
		}
		seen[name] = true
		d, ok := u.cfg.DatasetByTopic(f.Topic)
		if !ok {
			u.logFailureLocked("", "no dataset reads the topic of this ready file; it stays until the configuration names the topic",
				"topic", f.Topic, "partition", f.Partition, "file", name)
			continue
		}
		pending[d.Name]++
		if u.inflight[name] || tried[name] {
			continue
		}
		if r := u.retries[name]; r != nil && tried == nil && now.Before(r.next) {
			continue
		}
		todo = append(todo, job{file: f, dataset: d})
	}
	// Forget the backoff of files that are gone or marked.
	for name := range u.retries {
		if !seen[name] {
			delete(u.retries, name)
		}
	}
	u.queue = todo
	started = u.dispatchLocked(work, wg, tried)
	waiting = len(u.queue)
	u.mu.Unlock()
	for name, n := range pending {
		u.m.pending.WithLabelValues(name).Set(float64(n))
	}
	return started, waiting
}

// dispatchLocked starts the queued uploads while slots are free, and
// returns how many it started. u.mu is held.
func (u *Uploader) dispatchLocked(work context.Context, wg *sync.WaitGroup, tried map[string]bool) (started int) {
	for len(u.queue) > 0 && len(u.inflight) < u.parallel {
		j := u.queue[0]
		u.queue = u.queue[1:]
		name := j.file.Name.String()
		if u.inflight[name] {
			continue
		}
		u.inflight[name] = true
		if tried != nil {
			tried[name] = true
		}
		started++
		wg.Go(func() { u.attempt(work, j) })
	}
	return started
}

// dispatch starts queued uploads in the slots that freed up, and reports
// whether the queue still held work: when it is empty, a scan is due.
func (u *Uploader) dispatch(work context.Context, wg *sync.WaitGroup) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.queue) == 0 || work.Err() != nil {
		return false
	}
	u.dispatchLocked(work, wg, nil)
	return true
}

// attempt uploads one file and records the outcome.
func (u *Uploader) attempt(work context.Context, j job) {
	name := j.file.Name.String()
	defer func() {
		u.mu.Lock()
		delete(u.inflight, name)
		u.mu.Unlock()
		select {
		case u.wake <- struct{}{}:
		default:
		}
	}()
	start := u.now()
	size, err := u.upload(work, j)
	switch {
	case err == nil:
		u.m.files.WithLabelValues(j.dataset.Name).Inc()
		u.m.bytes.WithLabelValues(j.dataset.Name).Add(float64(size))
		u.m.seconds.Observe(u.now().Sub(start).Seconds())
		u.mu.Lock()
		delete(u.retries, name)
		u.mu.Unlock()
		u.log.Debug("uploaded", "dataset", j.dataset.Name, "topic", j.file.Topic, "partition", j.file.Partition, "file", name, "bytes", size)
	case errors.Is(err, errSkip):
		// Another attempt marked the file, or the committer removed it.
	case errors.As(err, new(*badFileError)):
		var bad *badFileError
		errors.As(err, &bad)
		u.quarantine(j, bad)
	case work.Err() != nil:
		// The drain deadline passed; the next start uploads the file.
	default:
		u.m.failures.WithLabelValues(j.dataset.Name).Inc()
		// The table may have moved or the credentials changed: ask the
		// catalog again next time.
		u.loc.Forget(j.dataset.Name)
		u.mu.Lock()
		r := u.retries[name]
		if r == nil {
			r = &retry{}
			u.retries[name] = r
		}
		r.delay = min(max(2*r.delay, u.backoffMin), u.backoffMax)
		r.next = u.now().Add(r.delay)
		u.logFailureLocked(j.dataset.Name, "upload failed; the file stays and is tried again",
			"dataset", j.dataset.Name, "topic", j.file.Topic, "partition", j.file.Partition, "file", name,
			"retry_in", r.delay.String(), "error", err)
		u.mu.Unlock()
	}
}

// errSkip is an upload with nothing left to do: the file is marked
// already, or gone.
var errSkip = errors.New("nothing to upload")

// upload stores the file and its sidecars, then writes its marker. It
// returns the file's size.
func (u *Uploader) upload(ctx context.Context, j job) (int64, error) {
	name := j.file.Name
	// Another attempt may have finished between the scan and now.
	if info, err := os.Stat(filepath.Join(u.dir, name.As(walfile.Uploaded).String())); err == nil && info.Size() > 0 {
		return 0, errSkip
	}
	dataLoc, err := u.loc.DataLocation(ctx, j.dataset)
	if err != nil {
		return 0, fmt.Errorf("data location of table %s: %w", j.dataset.Table, err)
	}
	id := name.UUID.String()
	f, err := os.Open(j.file.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, errSkip
	} else if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// Nothing leaves the disk unchecked: a file that fails is quarantined.
	if err := check(j.file.Path, u.dir, j); err != nil {
		return 0, err
	}
	marker := walfile.Marker{Object: storage.Join(dataLoc, id+walfile.SegmentExt), Size: info.Size()}

	if cols := j.dataset.BloomFilterColumns; len(cols) > 0 {
		filters, err := buildFilters(ctx, j.file.Path, cols)
		if err != nil {
			return 0, fmt.Errorf("bloom filters of %s: %w", name, err)
		}
		marker.Blooms = map[string]string{}
		for _, flt := range filters {
			loc := storage.Join(dataLoc, bloom.SidecarName(id, flt.Column))
			var buf bytes.Buffer
			if _, err := flt.WriteTo(&buf); err != nil {
				return 0, err
			}
			if err := u.store.Put(ctx, loc, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
				return 0, fmt.Errorf("upload bloom filter of %s: %w", name, err)
			}
			marker.Blooms[flt.Column] = loc
		}
	}
	failpoint.Hit(failpoint.UploaderBeforeObject)
	if err := u.store.Put(ctx, marker.Object, f, info.Size()); err != nil {
		return 0, fmt.Errorf("upload %s: %w", name, err)
	}
	// Order matters for crash safety: the marker is written only after the
	// object and every sidecar are stored. A crash before this line leaves
	// no marker; the next scan uploads the file again to the same names.
	failpoint.Hit(failpoint.UploaderBeforeMarker)
	if err := walfile.WithReserve(u.dir, func() error { return walfile.WriteMarker(u.dir, name, marker) }); err != nil {
		return 0, fmt.Errorf("mark %s uploaded: %w", name, err)
	}
	failpoint.Hit(failpoint.UploaderAfterMarker)
	return info.Size(), nil
}

// logFailureLocked logs at most one line per dataset every logEvery,
// telling in the next line how many it held back. u.mu is held.
func (u *Uploader) logFailureLocked(dataset, msg string, args ...any) {
	rl := u.logged[dataset]
	if rl == nil {
		rl = &rateLimit{}
		u.logged[dataset] = rl
	}
	now := u.now()
	if !rl.last.IsZero() && now.Sub(rl.last) < logEvery {
		rl.suppressed++
		return
	}
	if rl.suppressed > 0 {
		args = append(args, "suppressed", rl.suppressed)
	}
	rl.last, rl.suppressed = now, 0
	u.log.Warn(msg, args...)
}

func (u *Uploader) inflightCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.inflight)
}

// pendingCount counts ready files without a marker, for the drain's last log.
func (u *Uploader) pendingCount() int {
	files, err := walfile.List(u.dir)
	if err != nil {
		return -1
	}
	marked := map[string]bool{}
	for _, f := range files {
		if f.State == walfile.Uploaded {
			marked[f.Name.As(walfile.Ready).String()] = true
		}
	}
	n := 0
	for _, f := range files {
		if f.State == walfile.Ready && !marked[f.Name.String()] {
			n++
		}
	}
	return n
}
