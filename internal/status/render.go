package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icewal/ingestor/shared/redact"
)

// Output formats.
const (
	// FormatText is the view for a person.
	FormatText = "text"
	// FormatJSON is the Report as JSON, for scripts.
	FormatJSON = "json"
)

// Format writes r in the given format and passes the whole text through
// red, so that no secret of the configuration can leave in it.
func Format(r *Report, format string, red *redact.Redactor) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case FormatText:
		Render(&buf, r)
	case FormatJSON:
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return nil, fmt.Errorf("encode status: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown output format %q: want %s or %s", format, FormatText, FormatJSON)
	}
	if red == nil {
		return buf.Bytes(), nil
	}
	return []byte(red.String(buf.String())), nil
}

// unknown stands for a value whose process is down.
const unknown = "?"

// Render writes r for a person.
func Render(w io.Writer, r *Report) {
	fmt.Fprintf(w, "ingestor status   %s", r.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
	if r.Config != "" {
		fmt.Fprintf(w, "   config %s", r.Config)
	}
	fmt.Fprintln(w)
	renderVolume(w, r)
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tSTATE\tPID\tUPTIME\tSUPERVISOR\tRESTARTS\tADDRESS")
	for _, p := range r.Processes {
		pid := "-"
		if p.PID > 0 {
			pid = strconv.Itoa(p.PID)
		}
		sup, restarts := "-", "-"
		if p.SupervisorUp != nil {
			sup = StateDown
			if *p.SupervisorUp {
				sup = StateUp
			}
		}
		if p.Restarts != nil {
			restarts = num(*p.Restarts)
		}
		uptime := "-"
		if p.UptimeSeconds != nil {
			uptime = (time.Duration(*p.UptimeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.State, pid, uptime, sup, restarts, p.Address)
	}
	tw.Flush()
	for _, p := range r.Processes {
		if p.Error != "" {
			fmt.Fprintf(w, "  %s is down: %s\n", p.Name, p.Error)
		}
	}

	for _, d := range r.Datasets {
		fmt.Fprintln(w)
		renderDataset(w, r, d)
	}
	if o := r.OtherWAL; o != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "WAL files of topics no dataset reads: %s\n", walLine(*o))
	}
}

func renderVolume(w io.Writer, r *Report) {
	v := r.Volume
	fmt.Fprintf(w, "WAL %s   volume ", r.WALDir)
	switch {
	case v.UsedPct != nil:
		fmt.Fprintf(w, "%.1f%% used", *v.UsedPct)
	case v.ConsumerUsedPct != nil:
		fmt.Fprintf(w, "%.1f%% used (as the consumer measured)", *v.ConsumerUsedPct)
	default:
		fmt.Fprintf(w, "%s%% used", unknown)
	}
	fmt.Fprintf(w, ", pauses at %s%%, resumes below %s%%\n", num(v.HighWatermarkPct), num(v.ResumeBelowPct))
	if r.WALError != "" {
		fmt.Fprintf(w, "WAL directory unreadable: %s\n", r.WALError)
	}
	fmt.Fprint(w, "consumption ")
	switch {
	case v.Paused == nil:
		fmt.Fprintf(w, "%s (consumer down)\n", unknown)
	case *v.Paused:
		reasons := strings.Join(v.PausedReasons, ", ")
		if reasons == "" {
			reasons = "reason not reported"
		}
		fmt.Fprintf(w, "PAUSED (%s)\n", reasons)
	default:
		fmt.Fprintln(w, "running")
	}
}

func renderDataset(w io.Writer, r *Report, d Dataset) {
	fmt.Fprintf(w, "DATASET %s   topic %s -> table %s\n", d.Name, d.Topic, d.Table)

	rate := unknown
	if d.EventsPerSecond != nil {
		rate = fmt.Sprintf("%.1f", *d.EventsPerSecond)
	}
	paused := unknown
	if d.Paused != nil {
		paused = yesNo(*d.Paused)
		if len(d.PausedReasons) > 0 {
			paused += " (" + strings.Join(d.PausedReasons, ", ") + ")"
		}
	}
	fmt.Fprintf(w, "  consumer   %s events/s   paused %s   open segments %s\n", rate, paused, optNum(d.SegmentsOpen))
	if p := d.OperatorPause; p != nil {
		why := p.Reason
		if why == "" {
			why = "no reason given"
		}
		fmt.Fprintf(w, "  pause      by %s since %s (%s ago): %s; ingestor resume lifts it\n",
			p.By, p.Since.UTC().Format("2006-01-02 15:04:05 UTC"), age(r.Time.Sub(p.Since)), why)
	}
	fmt.Fprintf(w, "  watchdog   %s\n", watchdogLine(d))

	fmt.Fprintf(w, "  lag        %s records", optNum(d.LagTotal))
	if len(d.Lag) > 0 {
		parts := make([]string, len(d.Lag))
		for i, l := range d.Lag {
			parts[i] = fmt.Sprintf("p%d=%s", l.Partition, num(l.Records))
		}
		fmt.Fprintf(w, ": %s", strings.Join(parts, " "))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "  dropped    %s", optNum(d.DroppedTotal))
	if len(d.Dropped) > 0 {
		var parts []string
		for _, reason := range sortedKeys(d.Dropped) {
			parts = append(parts, reason+"="+num(d.Dropped[reason]))
		}
		fmt.Fprintf(w, ": %s", strings.Join(parts, " "))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "  wal        %s\n", walLine(d.WAL))
	if d.PendingUpload != nil {
		fmt.Fprintf(w, "  upload     %s files pending\n", num(*d.PendingUpload))
	} else {
		fmt.Fprintf(w, "  upload     %s (uploader down)\n", unknown)
	}

	fmt.Fprint(w, "  commit     ")
	switch {
	case d.LastCommit != nil:
		fmt.Fprintf(w, "last %s ago (%s)\n", age(r.Time.Sub(*d.LastCommit)), d.LastCommit.UTC().Format("15:04:05 UTC"))
	case committerUp(r):
		fmt.Fprintln(w, "none since the committer started")
	default:
		fmt.Fprintf(w, "%s (committer down)\n", unknown)
	}
	if e := d.LastCommitError; e != nil {
		fmt.Fprintf(w, "             last error %s ago [%s] %s: %s\n", age(r.Time.Sub(e.Time)), e.Reason, e.Step, oneLine(e.Error))
	}
	if u := d.Upkeep; u != nil {
		meta := unknown
		if u.MetadataBytes != nil {
			meta = size(int64(*u.MetadataBytes))
		}
		rewritten := unknown
		if u.RewrittenBytes != nil {
			rewritten = size(int64(*u.RewrittenBytes))
		}
		fmt.Fprintf(w, "  table      %s snapshots   metadata.json %s   %s manifests   %s data files (%s small)   %s expired   %s rewritten\n",
			optNum(u.Snapshots), meta, optNum(u.Manifests), optNum(u.DataFiles), optNum(u.SmallFiles), optNum(u.SnapshotsExpired), rewritten)
		if u.DeleteFiles != nil && (*u.DeleteFiles > 0 || (u.DeletesApplied != nil && *u.DeletesApplied > 0)) {
			fmt.Fprintf(w, "             %s delete files (at most %s in a partition) deleting %s rows; %s deleted rows resolved by compaction\n",
				num(*u.DeleteFiles), optNum(u.PartitionDeleteFiles), optNum(u.DeletedRows), optNum(u.DeletesApplied))
		}
		if u.CompactionsWaiting != nil && *u.CompactionsWaiting > 0 {
			fmt.Fprintf(w, "             %s compaction(s) written, waiting for the committer's replace\n", num(*u.CompactionsWaiting))
		}
		for _, st := range sortedKeys(u.StepFailures) {
			fmt.Fprintf(w, "             upkeep step %s failed %s times\n", st, num(u.StepFailures[st]))
		}
	}
}

func committerUp(r *Report) bool {
	for _, p := range r.Processes {
		if p.Name == "committer" {
			return p.State == StateUp
		}
	}
	return false
}

func walLine(s WALStates) string {
	line := fmt.Sprintf("active %s   ready %s   uploaded %s", files(s.Active), files(s.Ready), files(s.Uploaded))
	if s.Quarantined.Files > 0 {
		// Rows that are in no table: say so on the line an operator reads.
		line += fmt.Sprintf("   QUARANTINED %s (replay from Kafka: ingestor wal ls)", files(s.Quarantined))
	}
	return line
}

func files(c FileCount) string {
	noun := "files"
	if c.Files == 1 {
		noun = "file"
	}
	return fmt.Sprintf("%d %s (%s)", c.Files, noun, size(c.Bytes))
}

// size formats bytes in binary units.
func size(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// age formats a duration for a person: 850ms, 12s, 3m05s, 2h10m, 3d4h.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func optNum(v *float64) string {
	if v == nil {
		return unknown
	}
	return num(*v)
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "no"
}

// oneLine keeps an error on one line of the view.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 300
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// watchdogLine tells what the consumer's watchdog sees of a dataset.
func watchdogLine(d Dataset) string {
	if d.Stalled == nil {
		return unknown
	}
	var parts []string
	if len(d.Stalled) > 0 {
		parts = append(parts, "STALLED ("+strings.Join(d.Stalled, ", ")+")")
	}
	if d.UnassignedPartitions != nil && *d.UnassignedPartitions > 0 {
		parts = append(parts, num(*d.UnassignedPartitions)+" partitions without an owner in the group")
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ", ")
}
