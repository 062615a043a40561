package uploader

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/walfile"
)

// badFileError is a ready file that must not be uploaded: it fails its
// checksum or cannot be read. Retrying cannot help; it is quarantined.
type badFileError struct {
	reason string
	err    error
}

func (e *badFileError) Error() string { return e.err.Error() }
func (e *badFileError) Unwrap() error { return e.err }

// check verifies a ready file before its upload: the CRC32C of the whole
// file against the checksum record the consumer wrote at rotation, so that
// a file changed on the disk since (a flipped bit, a truncation) never
// reaches the bucket or the table. A file written before checksum records
// existed has none; its Parquet footer must at least read.
func check(path string, dir string, j job) error {
	sum, err := walfile.ReadSum(dir, j.file.UUID)
	switch {
	case errors.Is(err, walfile.ErrNoSum):
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			return &badFileError{reason: walfile.ReasonUnreadable, err: fmt.Errorf("read parquet footer of %s: %w", j.file.Name, err)}
		}
		r.Close()
		return nil
	case err != nil:
		// An empty or garbled record: the file cannot be checked.
		return &badFileError{reason: walfile.ReasonChecksum, err: err}
	}
	if err := walfile.Verify(path, sum); err != nil {
		var ce *walfile.ChecksumError
		if errors.As(err, &ce) {
			return &badFileError{reason: walfile.ReasonChecksum, err: err}
		}
		return err // an I/O error reading it: retried
	}
	return nil
}

// quarantine moves a bad ready file aside, counts it and logs it once with
// the range a user has to replay from Kafka. If the move fails the file
// stays and the next attempt tries again.
func (u *Uploader) quarantine(j job, bad *badFileError) {
	name := j.file.Name
	note := walfile.QuarantineNote{Reason: bad.reason, Error: bad.err.Error(), Role: role.Uploader, At: u.now()}
	if err := walfile.Quarantine(u.dir, name.String(), note); err != nil {
		u.log.Error("quarantine bad ready file", "dataset", j.dataset.Name, "file", name.String(), "error", err)
		return
	}
	u.m.quarantined.WithLabelValues(j.dataset.Name, bad.reason).Inc()
	u.log.Error("ready file quarantined: its rows are not uploaded or committed; replay its offsets from Kafka (docs/operations.md, \"Quarantined files\")",
		"dataset", j.dataset.Name, "reason", bad.reason, "file", name.String(),
		"topic", name.Topic, "partition", name.Partition, "start_offset", name.Start, "end_offset", name.End,
		"error", bad.err)
}

// badNameEvery is how often the uploader looks for names that do not
// parse: a listing of its own, so not at every scan.
const badNameEvery = 10 * time.Second

// quarantineBadNames moves aside the files whose names claim a ready
// segment or marker but do not parse, counted and logged once each: an
// operator must find out where they came from and replay their rows.
func (u *Uploader) quarantineBadNames() {
	names, err := walfile.BadNames(u.dir)
	if err != nil {
		u.log.Error("scan WAL directory for bad names", "dir", u.dir, "error", err)
		return
	}
	for _, base := range names {
		dataset := u.datasetOfName(base)
		note := walfile.QuarantineNote{Reason: walfile.ReasonBadName, Error: "the name does not parse as a WAL file name", Role: role.Uploader, At: u.now()}
		if err := walfile.Quarantine(u.dir, base, note); err != nil {
			u.log.Error("quarantine file with a bad name", "file", base, "error", err)
			continue
		}
		u.m.quarantined.WithLabelValues(dataset, walfile.ReasonBadName).Inc()
		u.log.Error("file quarantined: its name does not parse, so no role would act on it; find where it came from and replay its rows from Kafka (docs/operations.md, \"Quarantined files\")",
			"dataset", dataset, "reason", walfile.ReasonBadName, "file", base)
	}
}

// finishQuarantine writes, at start, the note of every quarantined file
// that has none because a crash came between its move and its note
// (walfile.Quarantine), with the reason its check gives again; each is
// counted and logged then, since the crash came before that too.
func (u *Uploader) finishQuarantine() {
	notes, err := walfile.FinishQuarantine(u.dir, u.quarantineReason)
	for _, n := range notes {
		dataset := u.datasetOfName(n.File)
		u.m.quarantined.WithLabelValues(dataset, n.Reason).Inc()
		u.log.Error("quarantined file had no note: its move was interrupted; note written. Replay its offsets from Kafka (docs/operations.md, \"Quarantined files\")",
			"dataset", dataset, "reason", n.Reason, "file", n.File,
			"topic", n.Topic, "partition", n.Partition, "start_offset", n.Start, "end_offset", n.End, "error", n.Error)
	}
	if err != nil {
		u.log.Error("write the notes of quarantined files", "dir", u.dir, "error", err)
	}
}

// quarantineReason checks a quarantined file again to tell why it was
// moved: the note a crash kept it from getting.
func (u *Uploader) quarantineReason(path string) (reason, text string) {
	n, err := walfile.Parse(filepath.Base(path))
	switch {
	case err != nil:
		return walfile.ReasonBadName, "the name does not parse as a WAL file name"
	case n.State == walfile.Uploaded:
		if _, err := walfile.ReadMarker(filepath.Dir(path), n.As(walfile.Ready)); err != nil {
			return walfile.ReasonBadMarker, err.Error()
		}
	case n.State == walfile.Ready:
		var bad *badFileError
		if err := check(path, filepath.Dir(path), job{file: walfile.File{Name: n, Path: path}}); errors.As(err, &bad) {
			return bad.reason, bad.err.Error()
		}
	}
	return "unknown", "moved into quarantine by a role that crashed before it wrote why; the file checks out now"
}

// datasetOfName returns the dataset whose topic a ready_ or uploaded_
// name starts with, parsed or not; "unknown" when none does.
func (u *Uploader) datasetOfName(base string) string {
	dataset := "unknown"
	for _, d := range u.cfg.Datasets {
		if strings.HasPrefix(base, walfile.ReadyPrefix+d.Topic+"_") || strings.HasPrefix(base, walfile.UploadedPrefix+d.Topic+"_") {
			dataset = d.Name
		}
	}
	return dataset
}
