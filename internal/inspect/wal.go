package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/icewal/ingestor/shared/walfile"
)

// Output formats of the Write functions.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Entry is one file of the WAL directory.
type Entry struct {
	walfile.File
	// ModTime is the file's modification time. A rename keeps it, so for
	// a ready file it is when the consumer finished writing it. For a
	// quarantined file it is when it was moved aside.
	ModTime time.Time
	// Reason is set for a file in the quarantine directory: why it was
	// moved out of the record path (walfile.Reason*).
	Reason string
}

// stateQuarantined is the state shown for a quarantined file.
const stateQuarantined = "quarantined"

func (e Entry) state() string {
	if e.Reason != "" {
		return stateQuarantined
	}
	return e.State.String()
}

// List returns the WAL files of dir in walfile.List's order (topic,
// partition, start offset). A file removed while it is listed (the
// committer deletes files as it goes) is left out.
func List(dir string) ([]Entry, error) {
	files, err := walfile.List(dir)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, len(files))
	for _, f := range files {
		info, err := os.Stat(f.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stat wal file %s: %w", filepath.Base(f.Path), err)
		}
		f.Size = info.Size()
		entries = append(entries, Entry{File: f, ModTime: info.ModTime()})
	}
	// Quarantined files last: their rows are in no table, and their
	// offsets are the range to replay from Kafka.
	notes, err := walfile.ListQuarantine(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		f := walfile.File{Path: filepath.Join(dir, walfile.QuarantineDir, n.File)}
		f.Topic, f.Partition, f.Start, f.End = n.Topic, n.Partition, n.Start, n.End
		if parsed, err := walfile.Parse(n.File); err == nil {
			f.Name = parsed
		}
		if info, err := os.Stat(f.Path); err == nil {
			f.Size = info.Size()
		}
		entries = append(entries, Entry{File: f, ModTime: n.At, Reason: n.Reason})
	}
	return entries, nil
}

// listRecord is one entry in `wal ls --output json`. Start and End are
// null for an active segment, whose offsets are not known yet.
type listRecord struct {
	State      string  `json:"state"`
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	Start      *int64  `json:"start"`
	End        *int64  `json:"end"`
	UUID       string  `json:"uuid"`
	Size       int64   `json:"size"`
	AgeSeconds float64 `json:"ageSeconds"`
	File       string  `json:"file"`
	// Reason is set for a quarantined file.
	Reason string `json:"reason,omitempty"`
}

// WriteList writes entries as a table (columns state, topic, partition,
// start, end, uuid, size, age; sizes in IEC units, ages rounded) or as a
// JSON array (sizes in bytes, ages in seconds), ages counted up to now.
func WriteList(w io.Writer, entries []Entry, now time.Time, format string) error {
	switch format {
	case FormatJSON:
		recs := make([]listRecord, 0, len(entries))
		for _, e := range entries {
			r := listRecord{
				State: e.state(), Topic: e.Topic, Partition: e.Partition,
				UUID: e.UUID.String(), Size: e.Size, File: e.Path,
				AgeSeconds: age(now, e.ModTime).Seconds(), Reason: e.Reason,
			}
			if e.State != walfile.Active {
				r.Start, r.End = &e.Start, &e.End
			}
			recs = append(recs, r)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	case FormatTable:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tTOPIC\tPARTITION\tSTART\tEND\tUUID\tSIZE\tAGE")
		for _, e := range entries {
			start, end := "-", "-"
			if e.State != walfile.Active {
				start, end = strconv.FormatInt(e.Start, 10), strconv.FormatInt(e.End, 10)
			}
			state := e.state()
			if e.Reason != "" {
				state += " (" + e.Reason + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n",
				state, e.Topic, e.Partition, start, end, e.UUID, FormatBytes(e.Size), FormatAge(age(now, e.ModTime)))
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown output format %q: want %s or %s", format, FormatTable, FormatJSON)
}

// age is how long ago t was; a clock step backwards gives 0, not a
// negative age.
func age(now, t time.Time) time.Duration {
	return max(now.Sub(t), 0)
}

// FormatBytes writes n in IEC units with one decimal: 512 B, 1.5 KiB,
// 64.0 MiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// FormatAge writes d with its two largest units: 42s, 3m07s, 5h02m,
// 3d04h.
func FormatAge(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}
