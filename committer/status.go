package committer

import (
	"sync"
	"time"

	pmetrics "github.com/icewal/ingestor/shared/metrics"

	"github.com/icewal/ingestor/shared/redact"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/walfile"
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
func (c *Committer) Status() rolestatus.Committer {
	lastCommit := pmetrics.SumBy(pmetrics.Read(c.metrics.lastCommit), "dataset")
	commits := pmetrics.SumBy(pmetrics.Read(c.metrics.commits), "dataset")
	waiting := pmetrics.SumBy(pmetrics.Read(c.metrics.waiting), "dataset")
	stopped := pmetrics.SumBy(pmetrics.Read(c.metrics.stopped), "dataset")
	handedBack := pmetrics.Read(c.metrics.handedBack)
	quarantined := pmetrics.Read(c.metrics.quarantined)
	c.lastErrors.mu.Lock()
	errs := make(map[string]commitError, len(c.lastErrors.byDataset))
	for k, v := range c.lastErrors.byDataset {
		errs[k] = v
	}
	c.lastErrors.mu.Unlock()

	now := time.Now()
	datasets := map[string]rolestatus.CommitterDataset{}
	for _, d := range c.cfg.Datasets {
		ds := rolestatus.CommitterDataset{
			Table:                    d.Table,
			Commits:                  commits[d.Name],
			FilesWaitingOffsetCommit: waiting[d.Name],
			AppendsStopped:           stopped[d.Name] > 0,
		}
		for _, s := range handedBack {
			if s.Labels["dataset"] == d.Name && s.Value > 0 {
				if ds.SegmentsHandedBack == nil {
					ds.SegmentsHandedBack = map[string]float64{}
				}
				ds.SegmentsHandedBack[s.Labels["reason"]] += s.Value
			}
		}
		for _, s := range quarantined {
			if s.Labels["dataset"] == d.Name && s.Labels["reason"] == walfile.ReasonObjectMissing {
				ds.SegmentsObjectMissing += s.Value
			}
		}
		if ts := lastCommit[d.Name]; ts > 0 {
			at := time.Unix(0, int64(ts*float64(time.Second)))
			age := now.Sub(at).Seconds()
			ds.LastCommit = at.UTC()
			ds.LastCommitAgeSeconds = &age
		}
		if e, ok := errs[d.Name]; ok {
			ds.LastError = &rolestatus.CommitError{
				Time:       e.at.UTC(),
				AgeSeconds: now.Sub(e.at).Seconds(),
				Reason:     e.reason,
				Step:       e.step,
				Error:      e.err,
			}
		}
		datasets[d.Name] = ds
	}
	return rolestatus.Committer{IntervalSeconds: c.interval.Seconds(), Datasets: datasets}
}
