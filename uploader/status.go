package uploader

import (
	pmetrics "github.com/icewal/ingestor/shared/metrics"

	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/walfile"
)

// Status reports, per dataset, the ready files waiting for upload (as of
// the last scan), those being uploaded now, those waiting to be retried
// after a failure, and the files and bytes uploaded and failed attempts
// since start. It reads only the uploader's own metrics and bookkeeping.
func (u *Uploader) Status() rolestatus.Uploader {
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

	datasets := map[string]rolestatus.UploaderDataset{}
	for _, d := range u.cfg.Datasets {
		datasets[d.Name] = rolestatus.UploaderDataset{
			PendingFiles:   pending[d.Name],
			UploadingFiles: uploading[d.Name],
			RetryingFiles:  retrying[d.Name],
			FilesUploaded:  files[d.Name],
			BytesUploaded:  bytes[d.Name],
			UploadFailures: failures[d.Name],
		}
	}
	return rolestatus.Uploader{Datasets: datasets}
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
