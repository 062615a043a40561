package uploader

import (
	pmetrics "github.com/icewal/ingestor/shared/metrics"

	"github.com/icewal/ingestor/shared/walfile"
)

// Status reports, per dataset, the ready files waiting for upload (as of
// the last scan), those being uploaded now, those waiting to be retried
// after a failure, and the files and bytes uploaded and failed attempts
// since start. It reads only the uploader's own metrics and bookkeeping.
func (u *Uploader) Status() map[string]any {
	pending := pmetrics.SumBy(pmetrics.Read(u.m.pending), "dataset")
	files := pmetrics.SumBy(pmetrics.Read(u.m.files), "dataset")
	bytes := pmetrics.SumBy(pmetrics.Read(u.m.bytes), "dataset")
	failures := pmetrics.SumBy(pmetrics.Read(u.m.failures), "dataset")

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
