package walfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// IDFile is the name of the file that holds the WAL directory's id.
const IDFile = ".wal-id"

var idRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// IDError is the refusal to guess a WAL directory's id: the id file is
// missing, empty or unreadable while ready segments wait in the directory.
// A new id would make every one of them look uncommitted (their offset
// commits are recorded in the ledger under the old id), and recovery would
// delete rows whose offsets Kafka has already moved past.
type IDError struct {
	// Path is the id file's full path.
	Path string
	// Ready is the number of ready segments and markers that wait.
	Ready int
	// Reason says what is wrong with the file.
	Reason string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("wal id file %s is %s while %d ready files wait in the directory: "+
		"a new id would misjudge them as uncommitted, refusing to start "+
		"(restore the file, see docs/operations.md, \"WAL id lost\")", e.Path, e.Reason, e.Ready)
}

// WALID returns the id of the WAL directory dir, creating it for a
// directory that holds no ready segment yet. The id names this directory's
// offset commits in the commit ledger. An id file that is missing, empty
// or not an id while ready segments or markers wait is an *IDError, never
// a new id.
func WALID(dir string) (string, error) {
	path := filepath.Join(dir, IDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if idRE.MatchString(id) {
			return id, nil
		}
		reason := "not a wal id"
		if id == "" {
			reason = "empty"
		}
		return "", &IDError{Path: path, Ready: countClosed(dir), Reason: reason}
	case !errors.Is(err, os.ErrNotExist):
		return "", &IDError{Path: path, Ready: countClosed(dir), Reason: "unreadable (" + err.Error() + ")"}
	}
	if n := countClosed(dir); n > 0 {
		return "", &IDError{Path: path, Ready: n, Reason: "missing"}
	}
	return createID(dir, path)
}

// countClosed counts the ready segments and uploaded markers in dir,
// including names that do not parse: any of them may hold committed rows.
func countClosed(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ReadyPrefix) || strings.HasPrefix(e.Name(), UploadedPrefix) {
			n++
		}
	}
	return n
}

// createID writes a new id durably: the tmp file is fsynced before it is
// linked into place, and the directory after. A crash before the link
// leaves a tmp_ file and no id (the next start creates one: no segment
// was written under this id); after the link and before the directory
// sync, at worst the id file vanishes with a power loss, before any
// segment of this id was made ready. Link fails if another role created
// the id first: then that one holds.
func createID(dir, path string) (string, error) {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("make wal id: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	tmp := filepath.Join(dir, TmpPrefix+"wal-id-"+id)
	defer os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("write wal id: %w", err)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write wal id: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("sync wal id: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write wal id: %w", err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("write wal id: %w", err)
	}
	if err := SyncDir(dir); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read wal id: %w", err)
	}
	got := strings.TrimSpace(string(b))
	if !idRE.MatchString(got) {
		return "", &IDError{Path: path, Reason: "not a wal id"}
	}
	return got, nil
}
