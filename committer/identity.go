package committer

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// IdentityError is a segment whose columns would mean something else in
// the table than what they were written as: the table was dropped and
// recreated, and a field id of the file names another column now. The
// file is never added, and the dataset's appends stop until an operator
// acts (docs/operations.md, "Table identity").
type IdentityError struct {
	File       string
	WrittenFor string // the table UUID recorded in the file, if any
	TableUUID  string
	Column     string
	FieldID    int
	TableName  string // what the field id names in the table now
}

func (e *IdentityError) Error() string {
	now := "no column"
	if e.TableName != "" {
		now = "column " + e.TableName
	}
	return fmt.Sprintf("segment %s was written for table %s, the table is now %s: its column %s has field id %d, which names %s there; "+
		"the file is not added (see docs/operations.md, \"Table identity\")",
		e.File, orUnknown(e.WrittenFor), e.TableUUID, e.Column, e.FieldID, now)
}

func orUnknown(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// ErrAppendsStopped marks a dataset whose appends stopped because some of
// its segments were written for another table than the one the catalog
// holds now; errors.Is finds it in what commitDataset reports.
var ErrAppendsStopped = errors.New("appends stopped")

// identityOf reads the walfile.MetaTable record of a footer; a file
// without one (written by an older version) gives the zero identity.
func identityOf(file string, footer *metadata.FileMetaData) (walfile.TableIdentity, error) {
	var id walfile.TableIdentity
	if v := footer.KeyValueMetadata().FindValue(walfile.MetaTable); v != nil {
		if err := json.Unmarshal([]byte(*v), &id); err != nil {
			return id, fmt.Errorf("segment %s: decode %s: %w", file, walfile.MetaTable, err)
		}
	}
	return id, nil
}

// checkIdentity compares the table a segment was written for, recorded in
// its footer under walfile.MetaTable, with tbl. Within one table Iceberg
// never gives a field id to another column, so the same table UUID is
// enough, whatever schema or spec the table has moved to since: the file
// stays valid by field id. For another UUID (a recreated table), or a file
// without the record, each of the file's columns must carry a field id
// that names a column of the same name in tbl's current schema. recreated
// reports a table UUID other than the one recorded, for the caller to log.
func checkIdentity(file string, tbl *table.Table, footer *metadata.FileMetaData) (recreated bool, err error) {
	uuid := tbl.Metadata().TableUUID().String()
	id, err := identityOf(file, footer)
	if err != nil {
		return false, err
	}
	if id.UUID == uuid {
		return false, nil
	}
	recreated = id.UUID != ""
	schema := tbl.Schema()
	root := footer.Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		n := root.Field(i)
		fid := int(n.FieldID())
		if fid < 0 {
			continue
		}
		f, ok := schema.FindFieldByID(fid)
		if !ok || f.Name != n.Name() {
			e := &IdentityError{File: file, WrittenFor: id.UUID, TableUUID: uuid, Column: n.Name(), FieldID: fid}
			if ok {
				e.TableName = f.Name
			}
			return recreated, e
		}
	}
	return recreated, nil
}

// writtenFor returns the schema and the partition spec a segment was
// written with, when its record names tbl and tbl still keeps them (a
// schema or spec changed by another engine since): the data file is
// described with the names and partition fields the file was written
// with, and its field ids tie it to the columns of every later schema.
// Otherwise the table's current ones. specKnown tells whether the spec
// comes from the record.
func writtenFor(tbl *table.Table, id walfile.TableIdentity) (schema *iceberg.Schema, spec iceberg.PartitionSpec, specKnown bool) {
	schema, spec = tbl.Schema(), tbl.Spec()
	if id.UUID != tbl.Metadata().TableUUID().String() {
		return schema, spec, false
	}
	for _, s := range tbl.Metadata().Schemas() {
		if s.ID == id.SchemaID {
			schema = s
		}
	}
	for _, s := range tbl.Metadata().PartitionSpecs() {
		if s.ID() == id.SpecID {
			return schema, s, true
		}
	}
	return schema, spec, false
}

// checkIdentities checks every segment of a batch against tbl before any
// is described for the append. One segment whose columns would mean
// something else in the table stops the whole dataset: nothing is
// appended (never a wrong file in the table, and no later file of a
// partition goes in ahead of an earlier one), each such file is logged
// and counted once, and the returned error, wrapping ErrAppendsStopped,
// is what the dataset's status shows until an operator acts. The check
// runs again at every pass, so that the appends resume by themselves once
// the table has the columns back. A recreated table whose columns still
// match is logged once per table UUID and the files go in.
func (c *Committer) checkIdentities(log *slog.Logger, d config.Dataset, tbl *table.Table, pending []*segment) error {
	var first *IdentityError
	stopped := 0
	for _, s := range pending {
		name := filepath.Base(s.ready.Path)
		if err := s.readFooter(); err != nil {
			continue // dataFile reports it
		}
		recreated, err := checkIdentity(name, tbl, s.footer)
		var ie *IdentityError
		switch {
		case errors.As(err, &ie):
			stopped++
			if first == nil {
				first = ie
			}
			if c.noteMismatch(s.ready.UUID) {
				c.metrics.identity.WithLabelValues(d.Name).Inc()
				log.Error("segment not added, and the dataset's appends stop: the table is not the one it was written for", "file", name,
					"topic", s.ready.Topic, "partition", s.ready.Partition, "start_offset", s.ready.Start, "end_offset", s.ready.End, "err", err)
			}
		case err != nil:
			// An unreadable record: dataFile leaves the file out.
		case recreated:
			if c.noteRecreated(tbl.Metadata().TableUUID().String()) {
				log.Warn("table recreated since the segment was written; its columns match the new table, the file goes in",
					"file", name, "table_uuid", tbl.Metadata().TableUUID().String())
			}
		}
	}
	if first == nil {
		c.metrics.stopped.WithLabelValues(d.Name).Set(0)
		return nil
	}
	c.metrics.stopped.WithLabelValues(d.Name).Set(1)
	return fmt.Errorf("%w for dataset %s: %d segments were written for another table: %w", ErrAppendsStopped, d.Name, stopped, first)
}

// noteMismatch reports whether the segment's mismatch is new (to be logged
// and counted).
func (c *Committer) noteMismatch(id uuid.UUID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mismatchSeen == nil {
		c.mismatchSeen = map[uuid.UUID]bool{}
	}
	seen := c.mismatchSeen[id]
	c.mismatchSeen[id] = true
	return !seen
}

// noteRecreated reports whether a recreated table's UUID is new (to be
// logged).
func (c *Committer) noteRecreated(tableUUID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recreatedSeen == nil {
		c.recreatedSeen = map[string]bool{}
	}
	seen := c.recreatedSeen[tableUUID]
	c.recreatedSeen[tableUUID] = true
	return !seen
}
