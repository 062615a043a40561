package inspect

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// DatasetFor returns the dataset a segment belongs to: the one named
// name, or, when name is empty, the one that reads the segment's topic.
func DatasetFor(cfg *config.Config, s *Segment, name string) (config.Dataset, error) {
	if name != "" {
		d, ok := cfg.Dataset(name)
		if !ok {
			return config.Dataset{}, fmt.Errorf("no dataset %q in the configuration", name)
		}
		return d, nil
	}
	if s.Name == nil {
		return config.Dataset{}, fmt.Errorf("%s is not a WAL file name, so its topic is unknown: name the dataset", s.Path)
	}
	d, ok := cfg.DatasetByTopic(s.Name.Topic)
	if !ok {
		return config.Dataset{}, fmt.Errorf("no dataset reads topic %q", s.Name.Topic)
	}
	return d, nil
}

// TableSpec loads the dataset's table through the configured catalog and
// returns its current partition spec and schema, the ones the consumer
// writes segments for. Unlike the roles it never creates a missing table.
func TableSpec(ctx context.Context, cfg *config.Config, d config.Dataset) (iceberg.PartitionSpec, *iceberg.Schema, error) {
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return iceberg.PartitionSpec{}, nil, err
	}
	if c, ok := cat.(io.Closer); ok {
		defer c.Close()
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier(d.TableIdent()))
	if err != nil {
		return iceberg.PartitionSpec{}, nil, fmt.Errorf("load table %s of dataset %s: %w", d.Table, d.Name, err)
	}
	return tbl.Spec(), tbl.Schema(), nil
}
