package walfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// OrphanPrefix starts the name of an orphan note, orphan_{uuid}.json: the
// consumer's recovery writes one for each ready segment it deletes because
// its offset commit never landed. The uploader may have stored that
// segment's object already (it uploads every ready file, committed or not);
// no table will ever refer to it, and the uploader deletes it after a
// safety age. List leaves these names out.
const OrphanPrefix = "orphan_"

// Orphan is the content of an orphan note.
type Orphan struct {
	// Dataset is the dataset whose table the segment was meant for.
	Dataset string `json:"dataset"`
	// Segment is the deleted ready file's name.
	Segment string `json:"segment"`
	// UUID is the segment's UUID, which names its object and sidecars.
	UUID uuid.UUID `json:"uuid"`
	// Written is the ready file's modification time: the in-table check
	// needs it (tables.Segment).
	Written time.Time `json:"written"`
	// Deleted is when recovery deleted the ready file.
	Deleted time.Time `json:"deleted"`
	// Objects are the object and sidecar locations that the segment's
	// uploaded_ marker recorded, when it had one.
	Objects []string `json:"objects,omitempty"`
}

// OrphanName returns the note's file name for segment id.
func OrphanName(id uuid.UUID) string { return OrphanPrefix + id.String() + MarkerExt }

// WriteOrphan writes the note atomically. Writing it again for the same
// segment replaces it.
func WriteOrphan(dir string, o Orphan) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode orphan note: %w", err)
	}
	return WriteAtomic(dir, OrphanName(o.UUID), b)
}

// OrphanFile is an orphan note found in the directory.
type OrphanFile struct {
	Orphan
	// Path is the note's full path.
	Path string
}

// ListOrphans returns the orphan notes in dir. A note that cannot be read
// or decoded is returned in bad, by path, and left in place.
func ListOrphans(dir string) (notes []OrphanFile, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list wal dir: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, OrphanPrefix) || !strings.HasSuffix(name, MarkerExt) {
			continue
		}
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since ReadDir
		}
		var o Orphan
		if err == nil {
			err = json.Unmarshal(b, &o)
		}
		if err != nil || OrphanName(o.UUID) != name {
			bad = append(bad, p)
			continue
		}
		notes = append(notes, OrphanFile{Orphan: o, Path: p})
	}
	return notes, bad, nil
}
