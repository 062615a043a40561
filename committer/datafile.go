package committer

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// segment is one uploaded WAL segment waiting for its append: the local
// ready file, its uploaded_ marker, and (once read) the ready file's footer.
type segment struct {
	ready  walfile.File
	marker walfile.File
	object walfile.Marker
	footer *metadata.FileMetaData
	// committed is this WAL directory's committed offset of the file's
	// partition when that offset is not yet past the file (-1: none).
	committed int64
	// after is an upsert segment's walfile.MetaUpsertAfter, read with the
	// footer; hasAfter tells whether it has one.
	after    int64
	hasAfter bool
}

// readFooter reads the Parquet footer of the local ready file once.
func (s *segment) readFooter() error {
	if s.footer != nil {
		return nil
	}
	r, err := file.OpenParquetFile(s.ready.Path, false)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Base(s.ready.Path), err)
	}
	defer r.Close()
	s.footer = r.MetaData()
	if v := s.footer.KeyValueMetadata().FindValue(walfile.MetaUpsertAfter); v != nil {
		after, err := strconv.ParseInt(*v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", filepath.Base(s.ready.Path), walfile.MetaUpsertAfter, err)
		}
		s.after, s.hasAfter = after, true
	}
	return nil
}

// dataFile builds the Iceberg data file of s for tbl from the footer alone:
// statistics from the column chunks, partition values from the footer key
// walfile.MetaPartition, location and size from the marker.
func (s *segment) dataFile(tbl *table.Table) (iceberg.DataFile, error) {
	name := filepath.Base(s.ready.Path)
	if err := s.readFooter(); err != nil {
		return nil, err
	}
	if s.object.Object == "" || s.object.Size <= 0 {
		return nil, fmt.Errorf("marker of %s: no object or size", name)
	}
	id, err := identityOf(name, s.footer)
	if err != nil {
		return nil, err
	}
	schema, spec, known := writtenFor(tbl, id)
	var values map[int]any
	if known {
		values, err = decodePartition(spec, schema, s.footer)
	} else {
		spec, values, err = partitionOf(tbl, s.footer)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		// The schema the file was written with: its statistics are
		// matched by column name, and a column renamed or dropped since
		// would not resolve in the current one.
		Schema:          schema,
		Spec:            spec,
		Format:          iceberg.ParquetFile,
		Metadata:        s.footer,
		FilePath:        s.object.Object,
		FileSize:        s.object.Size,
		Content:         iceberg.EntryContentData,
		PartitionValues: values,
		Properties:      tbl.Properties(),
		FormatVersion:   tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, fmt.Errorf("data file of %s: %w", name, err)
	}
	return df, nil
}

// decodePartition decodes the footer's partition values for spec, the
// spec the segment records it was written for.
func decodePartition(spec iceberg.PartitionSpec, schema *iceberg.Schema, footer *metadata.FileMetaData) (map[int]any, error) {
	v := footer.KeyValueMetadata().FindValue(walfile.MetaPartition)
	if v == nil {
		if spec.NumFields() == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("no %s in the footer of a file for partition spec %d", walfile.MetaPartition, spec.ID())
	}
	return tables.DecodePartition(spec, schema, *v)
}

// partitionOf decodes the footer's partition values for the table's
// current spec, or, for a file the consumer wrote before the spec changed,
// for the older spec whose fields they match.
func partitionOf(tbl *table.Table, footer *metadata.FileMetaData) (iceberg.PartitionSpec, map[int]any, error) {
	spec := tbl.Spec()
	v := footer.KeyValueMetadata().FindValue(walfile.MetaPartition)
	if v == nil {
		if spec.NumFields() == 0 {
			return spec, nil, nil
		}
		return spec, nil, fmt.Errorf("no %s in the footer of a file for partition spec %d", walfile.MetaPartition, spec.ID())
	}
	values, err := tables.DecodePartition(spec, tbl.Schema(), *v)
	if err == nil {
		return spec, values, nil
	}
	for _, old := range tbl.Metadata().PartitionSpecs() {
		if old.ID() == spec.ID() {
			continue
		}
		if vals, oerr := tables.DecodePartition(old, tbl.Schema(), *v); oerr == nil {
			return old, vals, nil
		}
	}
	return spec, nil, err
}
