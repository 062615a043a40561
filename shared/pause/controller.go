package pause

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/icewal/ingestor/shared/failpoint"
)

// Applier is what a pause is applied to: the consumer itself (sidecar
// layout) or the consumer child over the RPC channel (process tree). Both
// methods are idempotent.
type Applier interface {
	// Pause stops fetching the dataset's topic until Resume.
	Pause(ctx context.Context, dataset string, e Entry) error
	// Resume lifts the operator's pause of the dataset; a disk-watermark
	// pause stays.
	Resume(ctx context.Context, dataset string) error
}

// Answer is what a pause, a resume or a look at the state answers.
type Answer struct {
	// Paused is the record after the request: the datasets an operator
	// paused, with who, why and since when.
	Paused map[string]Entry `json:"paused"`
	// Changed are the datasets whose state the request changed.
	Changed []string `json:"changed"`
	// Applied tells whether the running consumer acted on the request.
	// When false, Note says why; the record holds the request all the
	// same, and the consumer reads it when it starts.
	Applied bool `json:"applied"`
	// Note explains an Applied of false.
	Note string `json:"note,omitempty"`
}

// ErrUnknownDataset is the error of a request naming a dataset that the
// configuration does not have.
var ErrUnknownDataset = errors.New("unknown dataset")

// Controller keeps the pause record of one WAL directory and applies
// its changes to the consumer. It is safe for concurrent use.
type Controller struct {
	dir      string
	datasets []string // the configured datasets, in configuration order
	target   func() Applier
	log      *slog.Logger
	now      func() time.Time

	// mu orders the requests and Sync: each writes the record, then
	// applies it, before the next starts (see Sync).
	mu sync.Mutex
	// recMu guards rec for Record, which must not wait for a request's
	// calls to the consumer; rec changes with both locks held.
	recMu sync.Mutex
	rec   Record
}

// NewController reads the pause record of the WAL directory dir. target
// returns the consumer to apply changes to, or nil while none runs;
// datasets are the configured datasets' names.
func NewController(dir string, datasets []string, target func() Applier, log *slog.Logger) (*Controller, error) {
	rec, err := Read(dir)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Controller{dir: dir, datasets: datasets, target: target, log: log, now: time.Now, rec: rec}, nil
}

// Record returns a copy of the pause record.
func (c *Controller) Record() Record {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	return c.copyLocked()
}

func (c *Controller) copyLocked() Record {
	out := Record{Datasets: make(map[string]Entry, len(c.rec.Datasets))}
	for k, v := range c.rec.Datasets {
		out.Datasets[k] = v
	}
	return out
}

// Pause pauses the named datasets, every configured one when names is
// empty. A dataset already paused keeps its pause (who, why, since).
func (c *Controller) Pause(ctx context.Context, names []string, by, reason string) (Answer, error) {
	if len(names) == 0 {
		names = c.datasets
	}
	for _, n := range names {
		if !slices.Contains(c.datasets, n) {
			return Answer{}, fmt.Errorf("%w %q: the configured datasets are %s", ErrUnknownDataset, n, strings.Join(c.datasets, ", "))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.copyLocked()
	var changed []string
	for _, n := range names {
		if _, ok := next.Datasets[n]; ok {
			continue
		}
		next.Datasets[n] = Entry{By: by, Reason: reason, Since: c.now().UTC().Truncate(time.Millisecond)}
		changed = append(changed, n)
	}
	if err := c.commitLocked(next, changed); err != nil {
		return Answer{}, err
	}
	for _, n := range changed {
		c.log.Info("dataset paused by an operator", "dataset", n, "by", by, "reason", reason)
	}
	return c.applyLocked(ctx, names, changed), nil
}

// Resume lifts the operator's pause of the named datasets, of every
// paused one when names is empty. A dataset that is not paused is left
// as it is; one that the configuration no longer has may still be
// resumed, to clear it from the record.
func (c *Controller) Resume(ctx context.Context, names []string) (Answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(names) == 0 {
		names = c.rec.Names()
	}
	for _, n := range names {
		if _, paused := c.rec.Datasets[n]; !paused && !slices.Contains(c.datasets, n) {
			return Answer{}, fmt.Errorf("%w %q: the configured datasets are %s", ErrUnknownDataset, n, strings.Join(c.datasets, ", "))
		}
	}
	next := c.copyLocked()
	var changed []string
	for _, n := range names {
		if _, ok := next.Datasets[n]; ok {
			delete(next.Datasets, n)
			changed = append(changed, n)
		}
	}
	if err := c.commitLocked(next, changed); err != nil {
		return Answer{}, err
	}
	for _, n := range changed {
		c.log.Info("dataset resumed by an operator", "dataset", n)
	}
	return c.applyLocked(ctx, names, changed), nil
}

// commitLocked writes next as the record, when anything changed, and
// keeps it. The record is written before the consumer is told (see the
// package doc, "Crash ordering"): a process that dies right after this
// write leaves the change recorded and unapplied, and the consumer that
// starts next applies it from the record.
func (c *Controller) commitLocked(next Record, changed []string) error {
	if len(changed) == 0 {
		return nil
	}
	if err := Write(c.dir, next); err != nil {
		return err
	}
	// A crash right here: the change is durable and the consumer has not
	// heard of it. The supervisor's death takes the children with it (the
	// sidecar consumer is this process), and the consumer that starts
	// next reads the record before it fetches. The caller sees its
	// connection fail and may ask again: a second pause or resume of the
	// same datasets changes nothing.
	failpoint.Hit(failpoint.PauseAfterRecord)
	c.recMu.Lock()
	c.rec = next
	c.recMu.Unlock()
	return nil
}

// applyLocked tells the running consumer the state of the named datasets,
// as the record has it.
func (c *Controller) applyLocked(ctx context.Context, names, changed []string) Answer {
	a := Answer{Paused: c.copyLocked().Datasets, Changed: changed}
	if a.Changed == nil {
		a.Changed = []string{}
	}
	if err := c.pushLocked(ctx, names); err != nil {
		a.Note = err.Error()
		c.log.Warn("pause recorded, not applied yet: the consumer applies it when it starts", "datasets", names, "note", a.Note)
		return a
	}
	a.Applied = true
	return a
}

// errNoConsumer is pushLocked's answer while no consumer runs.
var errNoConsumer = errors.New("the consumer is not running: it applies the record when it starts")

// pushLocked applies the record's state of the named datasets.
func (c *Controller) pushLocked(ctx context.Context, names []string) error {
	t := c.target()
	if t == nil {
		return errNoConsumer
	}
	for _, n := range names {
		var err error
		if e, paused := c.rec.Datasets[n]; paused {
			err = t.Pause(ctx, n, e)
		} else if slices.Contains(c.datasets, n) {
			err = t.Resume(ctx, n)
		}
		if err != nil {
			return fmt.Errorf("tell the consumer about %s: %w", n, err)
		}
	}
	return nil
}

// Sync applies the whole record to the consumer. The supervisor calls it
// after each start of a consumer child: a request that was recorded after
// the child read the record, but before the child could be reached over
// RPC, reaches it this way. Requests and Sync hold the same lock, and the
// supervisor makes the new child reachable before it calls Sync, so every
// request is applied by one or the other.
func (c *Controller) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pushLocked(ctx, c.datasets)
}
