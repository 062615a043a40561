package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/role"
)

// progress prints one line of the record path's counters, read from the
// roles' own metrics endpoints and from the table.
type progress struct {
	cfg  *config.Config
	cat  catalog.Catalog
	out  io.Writer
	last time.Time
	prev float64
}

func newProgress(cfg *config.Config, cat catalog.Catalog, out io.Writer) *progress {
	return &progress{cfg: cfg, cat: cat, out: out, last: time.Now()}
}

func (p *progress) scrape(ctx context.Context, r string) devenv.Samples {
	addr, err := metrics.RoleAddress(p.cfg, r)
	if err != nil {
		return devenv.Samples{}
	}
	s, err := devenv.Scrape(ctx, addr)
	if err != nil {
		return devenv.Samples{}
	}
	return s
}

func (p *progress) print(ctx context.Context, gen *devenv.Generator) {
	c := p.scrape(ctx, role.Consumer)
	u := p.scrape(ctx, role.Uploader)
	m := p.scrape(ctx, role.Committer)
	if len(c) == 0 || len(u) == 0 || len(m) == 0 {
		// A role is starting, restarting or has stopped at the end of a
		// drain: its counters are not there to print.
		return
	}
	consumed := c.Sum("ingestor_consumer_records_total")
	now := time.Now()
	rate := (consumed - p.prev) / now.Sub(p.last).Seconds()
	p.prev, p.last = consumed, now

	var drops []string
	byReason := c.ByLabel("ingestor_consumer_records_dropped_total", "reason")
	for r, n := range byReason {
		drops = append(drops, fmt.Sprintf("%s=%.0f", r, n))
	}
	sort.Strings(drops)
	dropped := "0"
	if len(drops) > 0 {
		dropped = strings.Join(drops, ",")
	}
	rows := p.tableRows(ctx)
	good, bad := gen.Produced()
	fmt.Fprintf(p.out, "%s produced=%d consumed=%.0f (%.0f/s) dropped=%s (bad sent %d) segments_open=%.0f rotated=%.0f uploaded=%.0f committed=%.0f commits=%.0f table_rows=%d\n",
		now.Format("15:04:05"), good+bad, consumed, rate, dropped, bad,
		c.Sum("ingestor_consumer_segments_open"), c.Sum("ingestor_consumer_files_rotated_total"),
		u.Sum("ingestor_uploader_files_uploaded_total"), m.Sum("ingestor_committer_files_committed_total"),
		m.Sum("ingestor_committer_commits_total"), rows)
}

// tableRows reads the row count of the table's current snapshot, -1 when
// the catalog cannot be read.
func (p *progress) tableRows(ctx context.Context) int64 {
	tbl, err := p.cat.LoadTable(ctx, catalog.ToIdentifier(p.cfg.Datasets[0].TableIdent()...))
	if err != nil {
		return -1
	}
	s := tbl.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		return 0
	}
	var rows int64
	fmt.Sscan(s.Summary.Properties["total-records"], &rows)
	return rows
}
