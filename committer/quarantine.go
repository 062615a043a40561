package committer

import (
	"path/filepath"
	"time"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/walfile"
)

// quarantineMarker moves a marker that is empty or not JSON out of the
// record path, so that the uploader sees its ready file unmarked and
// uploads it again (to the same object names), which writes a good marker.
// The ready file is not touched: its rows are not lost. A crash after the
// move leaves the ready file unmarked, which is the same outcome.
func (c *Committer) quarantineMarker(d config.Dataset, m walfile.File, bad error) {
	base := filepath.Base(m.Path)
	note := walfile.QuarantineNote{Reason: walfile.ReasonBadMarker, Error: bad.Error(), Role: role.Committer, At: time.Now()}
	if err := walfile.Quarantine(c.dir, base, note); err != nil {
		c.log.Error("quarantine bad marker", "dataset", d.Name, "file", base, "err", err)
		return
	}
	c.metrics.quarantined.WithLabelValues(d.Name, walfile.ReasonBadMarker).Inc()
	c.log.Warn("bad marker moved to quarantine; the uploader uploads the ready file again and writes it anew",
		"dataset", d.Name, "file", base, "topic", m.Topic, "partition", m.Partition,
		"start_offset", m.Start, "end_offset", m.End, "err", bad)
}
