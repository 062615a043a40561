package maintainer

import (
	"sync"
	"time"

	"github.com/icewal/ingestor/shared/config"
	pmetrics "github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/redact"
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
// (snapshots kept, metadata.json bytes, data manifests and data files of
// the current snapshot), and for each step its last success and its last
// error, kept after later successes with its time.
func (m *Maintainer) Status() map[string]any {
	gauges := map[string]map[string]float64{
		"snapshots":       pmetrics.SumBy(pmetrics.Read(m.metrics.snapshots), "dataset"),
		"metadata_bytes":  pmetrics.SumBy(pmetrics.Read(m.metrics.metadataBytes), "dataset"),
		"manifests":       pmetrics.SumBy(pmetrics.Read(m.metrics.manifests), "dataset"),
		"data_files":      pmetrics.SumBy(pmetrics.Read(m.metrics.dataFiles), "dataset"),
		"small_files":     pmetrics.SumBy(pmetrics.Read(m.metrics.smallFiles), "dataset"),
		"rewritten_bytes": pmetrics.SumBy(pmetrics.Read(m.metrics.rewrittenBytes), "dataset"),
	}
	expired := pmetrics.SumBy(pmetrics.Read(m.metrics.expired), "dataset")
	m.state.mu.Lock()
	defer m.state.mu.Unlock()
	now := m.now()
	datasets := map[string]any{}
	for _, d := range m.cfg.Datasets {
		ds := map[string]any{"table": d.Table, "snapshots_expired": expired[d.Name]}
		for k, g := range gauges {
			if v, ok := g[d.Name]; ok {
				ds[k] = v
			}
		}
		for step, o := range m.state.last[d.Name] {
			s := map[string]any{}
			if !o.ok.IsZero() {
				s["last_success"] = o.ok.UTC().Format(time.RFC3339Nano)
			}
			if !o.errAt.IsZero() {
				s["last_error"] = map[string]any{
					"time":        o.errAt.UTC().Format(time.RFC3339Nano),
					"age_seconds": now.Sub(o.errAt).Seconds(),
					"error":       o.errText,
				}
			}
			ds["last_"+step] = s
		}
		datasets[d.Name] = ds
	}
	return map[string]any{
		"interval_seconds": m.interval.Seconds(),
		"datasets":         datasets,
	}
}
