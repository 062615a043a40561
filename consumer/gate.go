package consumer

import (
	"log/slog"
	"sync"
	"time"

	"github.com/icewal/ingestor/shared/pause"
)

// Pause reasons, the values of ingestor_consumer_paused's reason label.
const (
	// PauseDisk: the WAL volume is above ingestion.wal.diskHighWatermarkPct;
	// every dataset is paused until it is 5 points under.
	PauseDisk = "disk"
	// PauseOperator: an operator paused the dataset (`ingestor pause`).
	PauseOperator = "operator"
)

// gate pauses and resumes the datasets' Kafka consumers for two reasons
// kept apart: the WAL volume's high watermark, which holds every dataset,
// and an operator's pause of one dataset (shared/pause). A dataset
// fetches only while neither holds, so lifting one never lifts the other.
// Pausing stops fetching without leaving the group: there is no
// rebalance, and the records wait in Kafka.
type gate struct {
	log  *slog.Logger
	m    *metrics
	high float64

	mu       sync.Mutex
	loops    []*loop
	disk     bool                   // the volume is above the watermark
	operator map[string]pause.Entry // datasets an operator paused
	applied  map[string]bool        // what each dataset's client was told
	since    time.Time              // when disk last changed
	usedPct  float64
}

func newGate(log *slog.Logger, m *metrics, high float64) *gate {
	return &gate{log: log, m: m, high: high, operator: map[string]pause.Entry{}, applied: map[string]bool{}}
}

// add makes the gate hold a dataset's client, and pauses it at once if
// the dataset is paused: a client added before its first poll fetches
// nothing of a paused dataset.
func (g *gate) add(l *loop) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.loops = append(g.loops, l)
	g.applyLocked()
}

// observe takes one measurement of the volume's use and pauses or resumes.
func (g *gate) observe(pct float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.usedPct = pct
	g.m.volumeUsed.Set(pct / 100)
	switch {
	case !g.disk && pct >= g.high:
		g.setDiskLocked(true)
		g.log.Warn("wal volume above the high watermark: pausing consumption", "used_pct", round1(pct), "high_pct", g.high, "reason", PauseDisk)
	case g.disk && pct < g.high-resumeGapPct:
		g.setDiskLocked(false)
		g.log.Info("wal volume below the resume mark: resuming consumption", "used_pct", round1(pct), "resume_pct", g.high-resumeGapPct, "reason", PauseDisk)
	}
	g.applyLocked()
}

func (g *gate) setDiskLocked(p bool) {
	now := time.Now()
	if g.disk && !g.since.IsZero() {
		g.m.pausedSeconds.Add(now.Sub(g.since).Seconds())
	}
	g.disk, g.since = p, now
}

// setOperator records an operator's pause (e non-nil) or its end (nil)
// for one dataset and applies it.
func (g *gate) setOperator(dataset string, e *pause.Entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e == nil {
		delete(g.operator, dataset)
	} else {
		g.operator[dataset] = *e
	}
	g.applyLocked()
}

// setOperatorAll replaces every operator pause with rec's.
func (g *gate) setOperatorAll(rec pause.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.operator = map[string]pause.Entry{}
	for n, e := range rec.Datasets {
		g.operator[n] = e
	}
	g.applyLocked()
}

// applyLocked tells each dataset's client what it must do now, and sets
// the metric of each reason.
func (g *gate) applyLocked() {
	for _, l := range g.loops {
		name := l.ds.Name
		_, op := g.operator[name]
		want := g.disk || op
		if was, ok := g.applied[name]; !ok || was != want {
			if want {
				l.cl.PauseFetchTopics(l.ds.Topic)
			} else {
				l.cl.ResumeFetchTopics(l.ds.Topic)
			}
			g.applied[name] = want
			if ok || want {
				msg := "dataset consumption resumed"
				if want {
					msg = "dataset consumption paused"
				}
				g.log.Info(msg, "dataset", name, "topic", l.ds.Topic, "disk", g.disk, "operator", op)
			}
		}
		g.m.paused.WithLabelValues(name, PauseDisk).Set(b2f(g.disk))
		g.m.paused.WithLabelValues(name, PauseOperator).Set(b2f(op))
	}
}

// pausedFor reports whether the dataset is paused, for any reason.
func (g *gate) pausedFor(dataset string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, op := g.operator[dataset]
	return g.disk || op
}

// unlessPaused runs f under the gate's lock if the dataset is not paused:
// a resume of the client's topic in f cannot undo a pause that arrives
// meanwhile.
func (g *gate) unlessPaused(dataset string, f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, op := g.operator[dataset]; g.disk || op {
		return
	}
	f()
}

// gateState is what Status tells of the gate.
type gateState struct {
	disk     bool
	operator map[string]pause.Entry
	usedPct  float64
}

func (g *gate) state() gateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	op := make(map[string]pause.Entry, len(g.operator))
	for k, v := range g.operator {
		op[k] = v
	}
	return gateState{disk: g.disk, operator: op, usedPct: g.usedPct}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
