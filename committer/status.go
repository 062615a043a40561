package committer

import (
	"sync"
	"time"

	pmetrics "github.com/icewal/ingestor/shared/metrics"

	"github.com/icewal/ingestor/shared/redact"
)

// commitErrors keeps the last failed commit attempt of each dataset for
// Status. Its zero value is ready to use.
type commitErrors struct {
	mu        sync.Mutex
	redactor  *redact.Redactor
	byDataset map[string]commitError
}

// commitError is one failed commit attempt, its text cleared of secrets.
type commitError struct {
	at     time.Time
	reason string // a value of the failures metric's reason label
	step   string // what the committer was doing
	err    string
}

// noteFailure records a failed commit attempt of a dataset. It is the hook
// commitDataset calls wherever it reports a failure.
func (c *Committer) noteFailure(dataset, reason, step string, err error) {
	e := &c.lastErrors
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.redactor == nil {
		e.redactor = redact.New(c.cfg)
		e.byDataset = map[string]commitError{}
	}
	text := ""
	if err != nil {
		text = e.redactor.String(err.Error())
	}
	e.byDataset[dataset] = commitError{at: time.Now(), reason: reason, step: step, err: text}
}

// Status reports, per dataset, the time of the last successful commit, the
// last failed attempt (kept after later successes, with its time, so that
// a person can tell whether it still matters), the commits made and the
// uploaded files waiting for a Kafka offset commit. It reads only the
// committer's own metrics and its record of failures.
func (c *Committer) Status() map[string]any {
	lastCommit := pmetrics.SumBy(pmetrics.Read(c.metrics.lastCommit), "dataset")
	commits := pmetrics.SumBy(pmetrics.Read(c.metrics.commits), "dataset")
	waiting := pmetrics.SumBy(pmetrics.Read(c.metrics.waiting), "dataset")
	stopped := pmetrics.SumBy(pmetrics.Read(c.metrics.stopped), "dataset")
	c.lastErrors.mu.Lock()
	errs := make(map[string]commitError, len(c.lastErrors.byDataset))
	for k, v := range c.lastErrors.byDataset {
		errs[k] = v
	}
	c.lastErrors.mu.Unlock()

	now := time.Now()
	datasets := map[string]any{}
	for _, d := range c.cfg.Datasets {
		ds := map[string]any{
			"table":                       d.Table,
			"commits":                     commits[d.Name],
			"files_waiting_offset_commit": waiting[d.Name],
			// true while segments written for another table stop the
			// appends; last_error says which and why.
			"appends_stopped": stopped[d.Name] > 0,
		}
		if ts := lastCommit[d.Name]; ts > 0 {
			at := time.Unix(0, int64(ts*float64(time.Second)))
			ds["last_commit"] = at.UTC().Format(time.RFC3339Nano)
			ds["last_commit_age_seconds"] = now.Sub(at).Seconds()
		}
		if e, ok := errs[d.Name]; ok {
			ds["last_error"] = map[string]any{
				"time":        e.at.UTC().Format(time.RFC3339Nano),
				"age_seconds": now.Sub(e.at).Seconds(),
				"reason":      e.reason,
				"step":        e.step,
				"error":       e.err,
			}
		}
		datasets[d.Name] = ds
	}
	return map[string]any{
		"interval_seconds": c.interval.Seconds(),
		"datasets":         datasets,
	}
}
