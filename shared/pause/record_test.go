package pause

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	got, err := Read(dir)
	if err != nil || len(got.Datasets) != 0 {
		t.Fatalf("Read of a directory without a record = %v, %v; want nothing paused", got, err)
	}
	since := time.Date(2026, 12, 2, 4, 50, 0, 0, time.UTC)
	want := Record{Datasets: map[string]Entry{
		"orders": {By: "alice (uid 1000)", Reason: "catalog migration", Since: since},
		"clicks": {By: "uid 65532", Since: since.Add(time.Minute)},
	}}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err = Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Datasets) != 2 || got.Datasets["orders"] != want.Datasets["orders"] || got.Datasets["clicks"] != want.Datasets["clicks"] {
		t.Fatalf("Read = %+v, want %+v", got, want)
	}
	if names := got.Names(); strings.Join(names, ",") != "clicks,orders" {
		t.Fatalf("Names = %v, want sorted", names)
	}
	// The write left no tmp_ file behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != RecordFile {
		t.Fatalf("directory holds %v, want only %s", entries, RecordFile)
	}
	// An empty record is written as one, and reads back as nothing paused.
	if err := Write(dir, Record{}); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(dir); err != nil || len(got.Datasets) != 0 {
		t.Fatalf("Read after resuming everything = %v, %v", got, err)
	}
}

// TestRecordUnreadable: a garbled record is an error that names the file
// and says what to do; nothing guesses which datasets it paused.
func TestRecordUnreadable(t *testing.T) {
	for name, content := range map[string]string{
		"truncated":     `{"version": 1, "datasets": {"orders": {"by": "al`,
		"not json":      "paused: orders\n",
		"other version": `{"version": 7, "datasets": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, RecordFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(dir)
			var re *RecordError
			if !errors.As(err, &re) || re.Path != filepath.Join(dir, RecordFile) {
				t.Fatalf("Read = %v, want a RecordError naming the file", err)
			}
			if !strings.Contains(err.Error(), "fix it or remove it") {
				t.Fatalf("error %q does not say what to do", err)
			}
		})
	}
}
