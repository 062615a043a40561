package walfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestWALIDRefusesToGuess: an id file emptied, garbled or deleted while
// ready segments wait is a refusal naming the file, never a new id (which
// would make recovery delete their committed rows); the id file is left as
// it was for the operator to restore.
func TestWALIDRefusesToGuess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(path string) error
		reason  string
	}{
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "empty"},
		{"garbled", func(p string) error { return os.WriteFile(p, []byte("\x00\x01zz\n"), 0o644) }, "not a wal id"},
		{"missing", os.Remove, "missing"},
		{"unreadable", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755) // reading a directory fails, also as root
		}, "unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			id, err := WALID(dir)
			if err != nil {
				t.Fatal(err)
			}
			ready := Name{State: Ready, Topic: "t", Partition: 0, Start: 0, End: 9, UUID: uuid.New()}
			if err := os.WriteFile(filepath.Join(dir, ready.String()), []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, IDFile)
			if err := tc.prepare(path); err != nil {
				t.Fatal(err)
			}
			got, err := WALID(dir)
			var ie *IDError
			if !errors.As(err, &ie) {
				t.Fatalf("WALID = %q, %v; want an *IDError", got, err)
			}
			if ie.Path != path || ie.Ready != 1 || !strings.Contains(ie.Reason, tc.reason) {
				t.Fatalf("error %+v", ie)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "docs/operations.md") {
				t.Fatalf("error does not name the file and what to do: %v", err)
			}
			if b, _ := os.ReadFile(path); strings.Contains(string(b), id) {
				t.Fatal("test set-up left the id")
			}
			// Restoring the file is the fix.
			os.RemoveAll(path)
			if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if again, err := WALID(dir); err != nil || again != id {
				t.Fatalf("after restore: %q, %v; want %q", again, err, id)
			}
		})
	}
}

// TestWALIDNewDirectory: a directory without ready files gets a new id,
// and an active segment (deleted by recovery anyway) does not stop that.
func TestWALIDNewDirectory(t *testing.T) {
	dir := t.TempDir()
	active := Name{State: Active, Topic: "t", Partition: 0, UUID: uuid.New()}
	if err := os.WriteFile(filepath.Join(dir, active.String()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := WALID(dir)
	if err != nil || len(id) != 16 {
		t.Fatalf("WALID = %q, %v", id, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, TmpPrefix+"*")); len(m) != 0 {
		t.Fatalf("tmp files left: %v", m)
	}
}
