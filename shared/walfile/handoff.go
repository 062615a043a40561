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

	"github.com/google/uuid"
)

// HandoffPrefix starts the name of a compaction hand-off,
// handoff_{uuid}.json: the maintainer has written compacted data files
// and leaves their replace commit to the committer, the table's one
// writer of metadata in this pod, which applies it right after its own
// append (shared/tables.ApplyHandoff). List leaves these names out.
//
// The hand-off is written after its data files are stored and before
// anything refers to them; dying before it is written leaves objects no
// metadata refers to, which the maintainer's orphan cleanup deletes. It is
// deleted after its replace is committed, or once the table shows it can
// never be (another writer replaced the same files); dying in between
// leaves a note whose replace the committer finds already in the table.
const HandoffPrefix = "handoff_"

// Handoff is the content of a hand-off note.
type Handoff struct {
	// ID names the note and, in the replace snapshot's summary
	// (tables.SummaryHandoff), the commit that applied it.
	ID uuid.UUID `json:"id"`
	// Dataset is the dataset whose table the files were compacted for.
	Dataset string `json:"dataset"`
	// TableUUID is the table's UUID when the files were written: a
	// hand-off for a table since dropped and recreated is never applied.
	TableUUID uuid.UUID `json:"tableUUID"`
	// Written is when the maintainer wrote the note.
	Written time.Time `json:"written"`
	// Groups are the compacted files, each replacing its group's files.
	Groups []HandoffGroup `json:"groups"`
	// ReadSequence is the sequence number of the snapshot the groups'
	// files were read at, with the deletes committed up to it applied:
	// the compacted files are committed with it as their data sequence
	// number, and a delete committed after it is one they do not hold
	// (tables.ApplyHandoff). Zero in notes written before compaction
	// applied deletes, whose groups read no file with a delete.
	ReadSequence int64 `json:"readSequence,omitempty"`
}

// HandoffGroup is one compacted data file and the files it replaces.
type HandoffGroup struct {
	// Replaced are the paths of the data files whose rows File holds.
	Replaced []string `json:"replaced"`
	// File is the compacted data file's location; empty when deletes
	// removed every row of the replaced files, which are then replaced
	// by nothing.
	File string `json:"file"`
	// Size is its size in bytes; Rows its row count: the replaced files'
	// rows together less those their deletes removed.
	Size int64 `json:"size"`
	Rows int64 `json:"rows"`
	// ReplacedBytes is the replaced files' size together: the bytes the
	// compaction read and wrote again.
	ReplacedBytes int64 `json:"replacedBytes"`
	// SpecID, SchemaID and SortOrderID are the partition spec, schema and
	// sort order the file was written with.
	SpecID      int `json:"specID"`
	SchemaID    int `json:"schemaID"`
	SortOrderID int `json:"sortOrderID"`
	// Partition is the file's partition values, encoded by
	// tables.EncodePartition.
	Partition string `json:"partition"`
}

// HandoffName returns the note's file name for id.
func HandoffName(id uuid.UUID) string { return HandoffPrefix + id.String() + MarkerExt }

// WriteHandoff writes the note atomically and syncs the directory: once
// it returns, the committer will see the note after any crash.
func WriteHandoff(dir string, h Handoff) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode hand-off: %w", err)
	}
	return WriteAtomic(dir, HandoffName(h.ID), b)
}

// HandoffFile is a hand-off note found in the directory.
type HandoffFile struct {
	Handoff
	// Path is the note's full path.
	Path string
}

// ListHandoffs returns the hand-off notes of dataset in dir, oldest
// first; an empty dataset lists every dataset's. A note that cannot be
// read or decoded is returned in bad, by path, and left in place.
func ListHandoffs(dir, dataset string) (notes []HandoffFile, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list wal dir: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, HandoffPrefix) || !strings.HasSuffix(name, MarkerExt) {
			continue
		}
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // applied and removed since ReadDir
		}
		var h Handoff
		if err == nil {
			err = json.Unmarshal(b, &h)
		}
		if err != nil || HandoffName(h.ID) != name {
			bad = append(bad, p)
			continue
		}
		if dataset != "" && h.Dataset != dataset {
			continue
		}
		notes = append(notes, HandoffFile{Handoff: h, Path: p})
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].Written.Before(notes[j].Written) })
	return notes, bad, nil
}
