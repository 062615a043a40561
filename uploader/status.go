package uploader

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/icewal/ingestor/shared/walfile"
)

// Status reports, per dataset, the ready files waiting for upload (as of
// the last scan), those being uploaded now, those waiting to be retried
// after a failure, and the files and bytes uploaded and failed attempts
// since start. It reads only the uploader's own metrics and bookkeeping.
func (u *Uploader) Status() map[string]any {
	pending := statusByDataset(u.m.pending)
	files := statusByDataset(u.m.files)
	bytes := statusByDataset(u.m.bytes)
	failures := statusByDataset(u.m.failures)

	uploading, retrying := map[string]int{}, map[string]int{}
	u.mu.Lock()
	for name := range u.inflight {
		uploading[u.statusDataset(name)]++
	}
	for name := range u.retries {
		retrying[u.statusDataset(name)]++
	}
	u.mu.Unlock()

	datasets := map[string]any{}
	for _, d := range u.cfg.Datasets {
		datasets[d.Name] = map[string]any{
			"pending_files":   pending[d.Name],
			"uploading_files": uploading[d.Name],
			"retrying_files":  retrying[d.Name],
			"files_uploaded":  files[d.Name],
			"bytes_uploaded":  bytes[d.Name],
			"upload_failures": failures[d.Name],
		}
	}
	return map[string]any{"datasets": datasets}
}

// statusDataset names the dataset of a ready file's name; "" when the
// name or its topic is unknown.
func (u *Uploader) statusDataset(name string) string {
	n, err := walfile.Parse(name)
	if err != nil {
		return ""
	}
	d, ok := u.cfg.DatasetByTopic(n.Topic)
	if !ok {
		return ""
	}
	return d.Name
}

// statusByDataset reads a metric vector's current values by their dataset
// label.
func statusByDataset(c prometheus.Collector) map[string]float64 {
	out := map[string]float64{}
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		var v float64
		switch {
		case pb.Gauge != nil:
			v = pb.Gauge.GetValue()
		case pb.Counter != nil:
			v = pb.Counter.GetValue()
		default:
			continue
		}
		for _, l := range pb.Label {
			if l.GetName() == "dataset" {
				out[l.GetValue()] += v
			}
		}
	}
	return out
}
