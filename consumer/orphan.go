package consumer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// noteOrphan records, before recovery deletes a ready file whose offset
// commit never landed, that the object the uploader may have stored for it
// belongs to no table: the uploader deletes it after a safety age. The note
// goes first: a crash between the two leaves the file and its note, and the
// next recovery deletes the file and writes the same note again.
func noteOrphan(dir string, ds config.Dataset, f walfile.File) error {
	o := walfile.Orphan{Dataset: ds.Name, Segment: f.Name.String(), UUID: f.UUID, Deleted: time.Now().UTC()}
	if info, err := os.Stat(f.Path); err == nil {
		o.Written = info.ModTime().UTC()
	}
	// The marker, if the upload finished, names the exact objects.
	if m, err := walfile.ReadMarker(filepath.Dir(f.Path), f.Name); err == nil {
		o.Objects = append(o.Objects, m.Object)
		for _, loc := range m.Blooms {
			o.Objects = append(o.Objects, loc)
		}
		sort.Strings(o.Objects[1:])
	}
	// On a full volume the reserve file makes room for the note: recovery
	// must not crash-loop on the volume it is there to drain.
	if err := walfile.WithReserve(dir, func() error { return walfile.WriteOrphan(dir, o) }); err != nil {
		return fmt.Errorf("recovery: note the object of %s for deletion: %w", f.Name, err)
	}
	return nil
}
