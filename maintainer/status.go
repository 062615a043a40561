package maintainer

import (
	"sync"
	"time"

	"github.com/icewal/ingestor/shared/config"
	pmetrics "github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/redact"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// passState keeps the last outcome of each step of each dataset for
// Status. Its zero value is ready to use.
type passState struct {
	mu       sync.Mutex
	redactor *redact.Redactor
	last     map[string]map[string]stepOutcome // dataset -> step
}

// stepOutcome is a step's last success and last error.
type stepOutcome struct {
	ok      time.Time
	errAt   time.Time
	errText string
}

// note records a step's outcome; err nil is a success.
func (p *passState) note(cfg *config.Config, dataset, step string, at time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.redactor == nil {
		p.redactor = redact.New(cfg)
		p.last = map[string]map[string]stepOutcome{}
	}
	if p.last[dataset] == nil {
		p.last[dataset] = map[string]stepOutcome{}
	}
	o := p.last[dataset][step]
	if err == nil {
		o.ok = at
	} else {
		o.errAt, o.errText = at, p.redactor.String(err.Error())
	}
	p.last[dataset][step] = o
}

// Status reports, per dataset, the table's health after the last pass
// (snapshots kept, metadata.json bytes, data manifests, data files and
// delete files of the current snapshot, the rows compaction removed for
// their deletes), and for each step its last success and its last
// error, kept after later successes with its time.
func (m *Maintainer) Status() rolestatus.Maintainer {
	snapshots := pmetrics.SumBy(pmetrics.Read(m.metrics.snapshots), "dataset")
	metadataBytes := pmetrics.SumBy(pmetrics.Read(m.metrics.metadataBytes), "dataset")
	manifests := pmetrics.SumBy(pmetrics.Read(m.metrics.manifests), "dataset")
	dataFiles := pmetrics.SumBy(pmetrics.Read(m.metrics.dataFiles), "dataset")
	smallFiles := pmetrics.SumBy(pmetrics.Read(m.metrics.smallFiles), "dataset")
	waiting := pmetrics.SumBy(pmetrics.Read(m.metrics.compactionsWaiting), "dataset")
	rewrittenBytes := pmetrics.SumBy(pmetrics.Read(m.metrics.rewrittenBytes), "dataset")
	expired := pmetrics.SumBy(pmetrics.Read(m.metrics.expired), "dataset")
	deleteFiles := pmetrics.SumBy(pmetrics.Read(m.metrics.deleteFiles), "dataset")
	partitionDeleteFiles := pmetrics.SumBy(pmetrics.Read(m.metrics.partitionDeleteFiles), "dataset")
	deletedRows := pmetrics.SumBy(pmetrics.Read(m.metrics.deletedRows), "dataset")
	deletesApplied := pmetrics.SumBy(pmetrics.Read(m.metrics.deletesApplied), "dataset")
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	now := m.now()
	datasets := map[string]rolestatus.MaintainerDataset{}
	for _, d := range m.cfg.Datasets {
		ds := rolestatus.MaintainerDataset{
			Table:            d.Table,
			SnapshotsExpired: expired[d.Name],
			// A gauge no pass has set yet is left out.
			Snapshots:            gauge(snapshots, d.Name),
			MetadataBytes:        gauge(metadataBytes, d.Name),
			Manifests:            gauge(manifests, d.Name),
			DataFiles:            gauge(dataFiles, d.Name),
			SmallFiles:           gauge(smallFiles, d.Name),
			CompactionsWaiting:   gauge(waiting, d.Name),
			RewrittenBytes:       gauge(rewrittenBytes, d.Name),
			DeleteFiles:          gauge(deleteFiles, d.Name),
			PartitionDeleteFiles: gauge(partitionDeleteFiles, d.Name),
			DeletedRows:          gauge(deletedRows, d.Name),
			DeletesApplied:       gauge(deletesApplied, d.Name),
		}
		for step, o := range m.state.last[d.Name] {
			s := &rolestatus.StepOutcome{}
			if !o.ok.IsZero() {
				s.LastSuccess = o.ok.UTC()
			}
			if !o.errAt.IsZero() {
				s.LastError = &rolestatus.StepError{
					Time:       o.errAt.UTC(),
					AgeSeconds: now.Sub(o.errAt).Seconds(),
					Error:      o.errText,
				}
			}
			if f := stepStatus(&ds, step); f != nil {
				*f = s
			}
		}
		datasets[d.Name] = ds
	}
	return rolestatus.Maintainer{IntervalSeconds: m.interval.Seconds(), Datasets: datasets}
}

// stepStatus is where a step's outcome goes in a dataset's status (in
// JSON, the key "last_<step>"); nil for a step it has no place for, which
// TestEveryStepHasItsStatus rules out.
func stepStatus(ds *rolestatus.MaintainerDataset, step string) **rolestatus.StepOutcome {
	switch step {
	case stepLoad:
		return &ds.LastLoad
	case stepExpire:
		return &ds.LastExpire
	case stepManifests:
		return &ds.LastManifests
	case stepCompact:
		return &ds.LastCompact
	case stepOrphans:
		return &ds.LastOrphans
	}
	return nil
}

// gauge is a dataset's value of a gauge, nil when it has none.
func gauge(byDataset map[string]float64, dataset string) *float64 {
	v, ok := byDataset[dataset]
	if !ok {
		return nil
	}
	return &v
}
