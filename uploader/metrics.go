package uploader

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// metrics are the uploader's Prometheus series.
type metrics struct {
	files    *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	failures *prometheus.CounterVec
	seconds  prometheus.Histogram
	pending  *prometheus.GaugeVec
	// quarantined counts ready files moved aside (walfile.Quarantine).
	quarantined *prometheus.CounterVec
	// scans counts the listings of the WAL directory.
	scans prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, datasets []config.Dataset) (*metrics, error) {
	m := &metrics{
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_uploader_files_uploaded_total",
			Help: "WAL segments stored in the table's data location and marked uploaded.",
		}, []string{"dataset"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_uploader_bytes_uploaded_total",
			Help: "Bytes of WAL segments uploaded (bloom-filter sidecars not included).",
		}, []string{"dataset"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_uploader_upload_failures_total",
			Help: "Failed upload attempts; the file is tried again at a later scan.",
		}, []string{"dataset"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ingestor_uploader_upload_seconds",
			Help:    "Time to upload one WAL segment with its sidecars and write its marker.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12), // 50 ms to 102 s
		}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_uploader_pending_files",
			Help: "Ready WAL segments without an uploaded marker, at the last scan.",
		}, []string{"dataset"}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_uploader_files_quarantined_total",
			Help: "Ready WAL files moved to the quarantine directory, by reason: checksum, unreadable, bad_name. Their rows must be replayed from Kafka.",
		}, []string{"dataset", "reason"}),
		scans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingestor_uploader_scans_total",
			Help: "Listings of the WAL directory: at start, every scan interval, and when the directory watch missed files. New ready files are taken from the watch without one.",
		}),
	}
	for _, c := range []prometheus.Collector{m.files, m.bytes, m.failures, m.seconds, m.pending, m.quarantined, m.scans} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register uploader metrics: %w", err)
		}
	}
	// Every dataset's series exist from the start, so that a rate() or an
	// alert on them sees zeros rather than nothing.
	for _, d := range datasets {
		m.files.WithLabelValues(d.Name)
		m.bytes.WithLabelValues(d.Name)
		m.failures.WithLabelValues(d.Name)
		m.pending.WithLabelValues(d.Name)
		for _, r := range []string{walfile.ReasonChecksum, walfile.ReasonUnreadable, walfile.ReasonBadName} {
			m.quarantined.WithLabelValues(d.Name, r)
		}
	}
	return m, nil
}
