package walfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// SumPrefix starts the name of a segment's checksum record,
// sum_{uuid}.json: the CRC32C and size of the whole ready file, written by
// the consumer at rotation before the rename to ready_ (see docs/wal.md,
// "Checksums"). The uploader verifies the file against it before it
// uploads; a file that fails is quarantined, never uploaded or committed.
// List leaves these names out.
const SumPrefix = "sum_"

// Castagnoli is the CRC32C table of segment checksums.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum is the content of a checksum record.
type Sum struct {
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// CRC32C is the Castagnoli CRC-32 of the whole file.
	CRC32C uint32 `json:"crc32c"`
}

// SumName returns the checksum record's file name of segment id.
func SumName(id uuid.UUID) string { return SumPrefix + id.String() + MarkerExt }

// WriteSum writes the checksum record of segment id: write a tmp_ file,
// fsync it, rename it into place. The directory is not fsynced here: the
// consumer fsyncs it once for the whole rotation, after the ready renames
// and before the offset commit, so a record and its ready file are both
// durable before Kafka moves past their rows.
func WriteSum(dir string, id uuid.UUID, s Sum) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode checksum: %w", err)
	}
	return writeRenamed(dir, SumName(id), b)
}

// ErrNoSum is the answer of ReadSum for a segment without a checksum
// record: one written before the records existed.
var ErrNoSum = errors.New("no checksum record")

// ReadSum reads the checksum record of segment id.
func ReadSum(dir string, id uuid.UUID) (Sum, error) {
	var s Sum
	b, err := os.ReadFile(filepath.Join(dir, SumName(id)))
	if errors.Is(err, os.ErrNotExist) {
		return s, ErrNoSum
	} else if err != nil {
		return s, fmt.Errorf("read checksum: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("decode checksum %s: %w", SumName(id), err)
	}
	return s, nil
}

// ChecksumError is a file whose content is not what the consumer wrote.
type ChecksumError struct {
	File      string
	Want, Got Sum
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("wal file %s fails its checksum: %d bytes with crc32c %08x, recorded %d bytes with crc32c %08x",
		e.File, e.Got.Size, e.Got.CRC32C, e.Want.Size, e.Want.CRC32C)
}

// Verify reads the whole file at path and compares it with its record.
func Verify(path string, want Sum) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := crc32.New(Castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	got := Sum{Size: n, CRC32C: h.Sum32()}
	if got != want {
		return &ChecksumError{File: filepath.Base(path), Want: want, Got: got}
	}
	return nil
}

// RemoveStraySums deletes the checksum records whose segment is gone: a
// crash between a record's write and its ready rename (the active file is
// deleted at start), or between the committer's deletes. The consumer
// calls it at start, before it writes any record.
func RemoveStraySums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list wal dir: %w", err)
	}
	live := map[uuid.UUID]bool{}
	for _, e := range entries {
		if n, err := Parse(e.Name()); err == nil {
			live[n.UUID] = true
		}
	}
	for _, e := range entries {
		base := e.Name()
		if !strings.HasPrefix(base, SumPrefix) || !strings.HasSuffix(base, MarkerExt) {
			continue
		}
		id, err := uuid.Parse(strings.TrimSuffix(strings.TrimPrefix(base, SumPrefix), MarkerExt))
		if err != nil || live[id] {
			continue
		}
		if err := Remove(filepath.Join(dir, base)); err != nil {
			return err
		}
	}
	return nil
}
