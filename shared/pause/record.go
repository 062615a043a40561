package pause

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/icewal/ingestor/shared/walfile"
)

// RecordFile is the name of the pause record in the WAL directory.
const RecordFile = "paused.json"

// recordVersion is the record's format version.
const recordVersion = 1

// Entry is one dataset's operator pause.
type Entry struct {
	// By names who paused: the user the kernel reported for the
	// connection that asked.
	By string `json:"by"`
	// Reason is the text the operator gave; it may be empty.
	Reason string `json:"reason,omitempty"`
	// Since is when the dataset was paused.
	Since time.Time `json:"since"`
}

// Record is the set of datasets an operator paused.
type Record struct {
	// Datasets maps a paused dataset's name to its pause.
	Datasets map[string]Entry `json:"datasets"`
}

// Names returns the paused datasets, sorted.
func (r Record) Names() []string {
	names := make([]string, 0, len(r.Datasets))
	for n := range r.Datasets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RecordError is a pause record that exists but cannot be read. Nothing
// guesses which datasets it paused: the role that reads it refuses to
// start until it is mended.
type RecordError struct {
	// Path is the record's full path.
	Path string
	// Err is what went wrong.
	Err error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("pause record %s cannot be read (%v): it tells which datasets an operator paused; "+
		"fix it or remove it (removing it resumes every dataset), see docs/operations.md, \"Pause and resume\"", e.Path, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// file is the record as it is stored.
type file struct {
	Version  int              `json:"version"`
	Datasets map[string]Entry `json:"datasets"`
}

// Read reads the pause record of the WAL directory dir. A missing record
// is an empty one: nothing is paused.
func Read(dir string) (Record, error) {
	path := filepath.Join(dir, RecordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{Datasets: map[string]Entry{}}, nil
	}
	if err != nil {
		return Record{}, &RecordError{Path: path, Err: err}
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return Record{}, &RecordError{Path: path, Err: err}
	}
	if f.Version != recordVersion {
		return Record{}, &RecordError{Path: path, Err: fmt.Errorf("version %d, want %d", f.Version, recordVersion)}
	}
	if f.Datasets == nil {
		f.Datasets = map[string]Entry{}
	}
	return Record{Datasets: f.Datasets}, nil
}

// Write replaces the pause record of dir with r, atomically: a crash
// leaves the old record or the new one, never half of one.
func Write(dir string, r Record) error {
	ds := r.Datasets
	if ds == nil {
		ds = map[string]Entry{}
	}
	b, err := json.MarshalIndent(file{Version: recordVersion, Datasets: ds}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode pause record: %w", err)
	}
	if err := walfile.WriteAtomic(dir, RecordFile, append(b, '\n')); err != nil {
		return fmt.Errorf("write pause record: %w", err)
	}
	return nil
}
