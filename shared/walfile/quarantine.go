package walfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/icewal/ingestor/shared/failpoint"
)

// QuarantineDir is the directory inside the WAL directory where files
// that must not go on in the record path are moved aside: a ready file
// that fails its checksum or cannot be read, a name that does not parse.
// No role acts on what is there; an operator replays its offsets from
// Kafka (docs/operations.md, "Quarantined files") and deletes it.
const QuarantineDir = "quarantine"

// Quarantine reasons, the values of the reason label of
// ingestor_<role>_files_quarantined_total.
const (
	ReasonChecksum   = "checksum"   // the file is not what the consumer wrote
	ReasonUnreadable = "unreadable" // the file cannot be read as Parquet
	ReasonBadName    = "bad_name"   // the name does not parse
	ReasonBadMarker  = "bad_marker" // an uploaded_ marker that is empty or not JSON
	// ReasonObjectMissing is a ready file whose segment the table holds
	// but whose object is not in the store: the file is the only copy of
	// rows the table names.
	ReasonObjectMissing = "object_missing"
)

// reasonExt ends the name of the note written beside a quarantined file.
const reasonExt = ".reason.json"

// QuarantineNote is what the note beside a quarantined file holds: why it
// was moved, and the range a user has to replay from Kafka.
type QuarantineNote struct {
	// File is the quarantined file's name.
	File string `json:"file"`
	// Reason is one of the Reason constants.
	Reason string `json:"reason"`
	// Error is the error that the check returned.
	Error string `json:"error"`
	// Topic, Partition, Start and End are the file's range, when its name
	// parses.
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	// Role is the role that moved the file.
	Role string `json:"role"`
	// At is when it was moved.
	At time.Time `json:"at"`
}

// Quarantine moves the file dir/base into the quarantine directory with a
// note of why. The rename comes first: once it is done no role acts on
// the file any more. A crash before the note leaves the file quarantined
// without one; ListQuarantine shows it with an unknown reason. The
// segment's marker and checksum record, if any, are moved beside it.
func Quarantine(dir, base string, note QuarantineNote) error {
	q := filepath.Join(dir, QuarantineDir)
	if err := os.MkdirAll(q, 0o755); err != nil {
		return fmt.Errorf("quarantine %s: %w", base, err)
	}
	if n, err := Parse(base); err == nil {
		note.Topic, note.Partition, note.Start, note.End = n.Topic, n.Partition, n.Start, n.End
	}
	note.File = base
	if err := os.Rename(filepath.Join(dir, base), filepath.Join(q, base)); err != nil {
		return fmt.Errorf("quarantine %s: %w", base, err)
	}
	if n, err := Parse(base); err == nil && n.State == Ready {
		for _, side := range []string{n.As(Uploaded).String(), SumName(n.UUID)} {
			if err := os.Rename(filepath.Join(dir, side), filepath.Join(q, side)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("quarantine %s: %w", side, err)
			}
		}
	}
	// A crash here leaves the file in quarantine/ without its note: no
	// role acts on it any more, and the uploader's next start writes the
	// note (FinishQuarantine). Nothing of the file is lost either way.
	failpoint.Hit(failpoint.QuarantineBeforeNote)
	if err := writeNote(q, note); err != nil {
		return err
	}
	return SyncDir(dir)
}

// writeNote writes the note of a quarantined file beside it.
func writeNote(q string, note QuarantineNote) error {
	b, err := json.Marshal(note)
	if err != nil {
		return fmt.Errorf("encode quarantine note: %w", err)
	}
	return WriteAtomic(q, note.File+reasonExt, b)
}

// FinishQuarantine writes the missing note of every quarantined file that
// has none: a move a crash interrupted (see Quarantine). reason tells,
// from the file's path in the quarantine directory, why it was moved (the
// caller checks it again), as a Reason constant and an error text. It
// returns the notes it wrote.
func FinishQuarantine(dir string, reason func(path string) (string, string)) ([]QuarantineNote, error) {
	q := filepath.Join(dir, QuarantineDir)
	entries, err := os.ReadDir(q)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	var written []QuarantineNote
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() || strings.HasSuffix(base, reasonExt) || strings.HasPrefix(base, TmpPrefix) {
			continue
		}
		if _, err := os.Stat(filepath.Join(q, base+reasonExt)); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return written, fmt.Errorf("quarantine note of %s: %w", base, err)
		}
		if strings.HasPrefix(base, SumPrefix) {
			continue // moved with its segment; never quarantined alone
		}
		if n, err := Parse(base); err == nil && n.State == Uploaded {
			if _, err := os.Stat(filepath.Join(q, n.As(Ready).String())); err == nil {
				continue // moved beside its quarantined segment
			}
		}
		info, _ := e.Info()
		note := QuarantineNote{File: base, Role: "unknown", At: time.Now()}
		if info != nil {
			note.At = info.ModTime()
		}
		note.Reason, note.Error = reason(filepath.Join(q, base))
		if n, err := Parse(base); err == nil {
			note.Topic, note.Partition, note.Start, note.End = n.Topic, n.Partition, n.Start, n.End
		}
		if err := writeNote(q, note); err != nil {
			return written, err
		}
		written = append(written, note)
	}
	if len(written) > 0 {
		if err := SyncDir(q); err != nil {
			return written, err
		}
	}
	return written, nil
}

// ListQuarantine returns the notes of the quarantined files in dir, oldest
// first. A file without a readable note is listed with reason "unknown".
func ListQuarantine(dir string) ([]QuarantineNote, error) {
	entries, err := os.ReadDir(filepath.Join(dir, QuarantineDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list quarantine: %w", err)
	}
	var notes []QuarantineNote
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() || strings.HasSuffix(base, reasonExt) || strings.HasPrefix(base, TmpPrefix) {
			continue
		}
		note := QuarantineNote{File: base, Reason: "unknown"}
		b, err := os.ReadFile(filepath.Join(dir, QuarantineDir, base+reasonExt))
		if err == nil {
			json.Unmarshal(b, &note)
		} else if isSideFile(base) {
			continue // moved beside its quarantined segment
		}
		notes = append(notes, note)
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].At.Before(notes[j].At) })
	return notes, nil
}

// isSideFile reports a marker or checksum record moved with its segment.
func isSideFile(base string) bool {
	return strings.HasPrefix(base, UploadedPrefix) || strings.HasPrefix(base, SumPrefix)
}

// BadNames returns the names in dir that claim to be ready segments or
// markers (they start with ready_ or uploaded_) but do not parse: no role
// would ever act on them, and their rows would silently never land.
func BadNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list wal dir: %w", err)
	}
	var bad []string
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() || !(strings.HasPrefix(base, ReadyPrefix) || strings.HasPrefix(base, UploadedPrefix)) {
			continue
		}
		if _, err := Parse(base); err != nil {
			bad = append(bad, base)
		}
	}
	return bad, nil
}
