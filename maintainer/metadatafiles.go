package maintainer

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"regexp"
	"strconv"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// metadataName is the name of a metadata.json version as iceberg-go and
// Iceberg's Java library write it: <version>-<uuid>.metadata.json, with
// the compression codec before .metadata.json where the table compresses
// its metadata.
var metadataName = regexp.MustCompile(`^(\d+)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(\.gz|\.zstd)?\.metadata\.json$`)

// metadataVersion returns the version a metadata.json's name starts with.
func metadataVersion(name string) (int64, bool) {
	m := metadataName.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	return v, err == nil
}

// deleteOldMetadata deletes the metadata.json versions that have left the
// table's metadata log, as write.metadata.delete-after-commit.enabled does
// at every commit: a table another engine created without it keeps every
// version (about 300 KB each on a busy table, one per commit: a
// gigabyte a day at a 20 s interval) until the orphan cleanup's margin,
// days later. Tables with the property set delete their own at each
// commit; the step does nothing for them and lists nothing.
//
// What it deletes, in the directory of the current metadata.json only:
// files named like a metadata.json version (metadataName), of a version
// below the current one, that are neither the current one nor in its
// metadata log. The log keeps the newest write.metadata.previous-versions-max
// versions, which time travel by metadata file and other engines' tools
// may read; a version above the current one is a commit that landed
// since the table was loaded (or one under way) and is left alone. Names
// are compared without the location, since the log may spell the scheme
// differently than the listing.
//
// Dying part way leaves the rest of the old versions, which no metadata
// refers to, for the next pass; nothing refers to any of them, so
// whichever were deleted the table reads the same.
func (m *Maintainer) deleteOldMetadata(ctx context.Context, tbl *table.Table) (files int, size int64, err error) {
	meta := tbl.Metadata()
	if on, _ := strconv.ParseBool(meta.Properties()[table.MetadataDeleteAfterCommitEnabledKey]); on {
		return 0, 0, nil
	}
	current := tbl.MetadataLocation()
	slash := strings.LastIndex(current, "/")
	if slash < 0 {
		return 0, 0, fmt.Errorf("metadata location %q has no directory", current)
	}
	dir, currentName := current[:slash], current[slash+1:]
	currentVersion, ok := metadataVersion(currentName)
	if !ok {
		// A name this step does not know (a Hadoop table's v<N>.metadata.json):
		// it cannot tell old from new, so it deletes nothing.
		return 0, 0, nil
	}
	keep := map[string]bool{currentName: true}
	for e := range meta.PreviousFiles() {
		keep[e.MetadataFile[strings.LastIndex(e.MetadataFile, "/")+1:]] = true
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, err
	}
	listable, ok := fs.(icebergio.ListableIO)
	if !ok {
		return 0, 0, fmt.Errorf("file IO %T cannot list the metadata directory", fs)
	}
	type old struct {
		path string
		size int64
	}
	var doomed []old
	root := true // the walk visits the directory itself first
	err = listable.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if root {
				root = false
				return nil
			}
			return iofs.SkipDir // only the metadata directory's own files
		}
		name := path[strings.LastIndex(path, "/")+1:]
		v, ok := metadataVersion(name)
		if !ok || keep[name] || v >= currentVersion {
			return nil
		}
		var n int64
		if info, err := d.Info(); err == nil {
			n = info.Size()
		}
		doomed = append(doomed, old{path, n})
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list metadata directory %s: %w", dir, err)
	}
	for _, o := range doomed {
		if err := ctx.Err(); err != nil {
			return files, size, err
		}
		// Dying here: the versions deleted so far are gone, the rest
		// stay for the next pass.
		if err := fs.Remove(o.path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return files, size, fmt.Errorf("delete old metadata version %s: %w", o.path, err)
		}
		files++
		size += o.size
	}
	return files, size, nil
}
