package committer

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/walfile"
)

// IdentityError is a segment whose columns would mean something else in
// the table than what they were written as: the table was dropped and
// recreated, and a field id of the file names another column now. The
// file is never added; the dataset's appends stop until an operator acts
// (docs/operations.md, "Table identity").
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

// checkIdentity compares the table a segment was written for, recorded in
// its footer under walfile.MetaTable, with tbl. Within one table Iceberg
// never gives a field id to another column, so the same table UUID is
// enough. For another UUID (a recreated table), or a file without the
// record, each of the file's columns must carry a field id that names a
// column of the same name in tbl's current schema. recreated reports a
// table UUID other than the one recorded, for the caller to log.
func checkIdentity(file string, tbl *table.Table, footer *metadata.FileMetaData) (recreated bool, err error) {
	uuid := tbl.Metadata().TableUUID().String()
	var id walfile.TableIdentity
	if v := footer.KeyValueMetadata().FindValue(walfile.MetaTable); v != nil {
		if err := json.Unmarshal([]byte(*v), &id); err != nil {
			return false, fmt.Errorf("segment %s: decode %s: %w", file, walfile.MetaTable, err)
		}
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

// identityOK checks s against tbl before it is described for the append.
// A file that fails is left out, counted and logged: never a file whose
// columns mean something else in the table. A recreated table whose
// columns still match is logged once per table UUID and the file goes in.
func (c *Committer) identityOK(log *slog.Logger, tbl *table.Table, s *segment) bool {
	name := filepath.Base(s.ready.Path)
	if err := s.readFooter(); err != nil {
		return true // dataFile reports it
	}
	recreated, err := checkIdentity(name, tbl, s.footer)
	dataset := c.datasetOf(s.ready.Topic)
	if err != nil {
		c.metrics.identity.WithLabelValues(dataset).Inc()
		log.Error("segment left out of the append: the table is not the one it was written for", "file", name,
			"topic", s.ready.Topic, "partition", s.ready.Partition, "start_offset", s.ready.Start, "end_offset", s.ready.End, "err", err)
		return false
	}
	if recreated {
		uuid := tbl.Metadata().TableUUID().String()
		c.mu.Lock()
		seen := c.recreatedSeen[uuid]
		if c.recreatedSeen == nil {
			c.recreatedSeen = map[string]bool{}
		}
		c.recreatedSeen[uuid] = true
		c.mu.Unlock()
		if !seen {
			log.Warn("table recreated since the segment was written; its columns match the new table, the file goes in",
				"file", name, "table_uuid", uuid)
		}
	}
	return true
}
