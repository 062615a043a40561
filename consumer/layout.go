package consumer

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icewal/ingestor/shared/parquetfmt"
)

// layouts caches the Parquet layout of each flat table's Arrow schema:
// making it (the Parquet schema, the serialized Arrow schema) is most of
// what a writer costs to set up, and every segment of a table has the
// same. Keyed by the schema value a table view hands out, so a schema
// change gets its own; the cache is dropped when it holds maxLayouts,
// which only a process that sees that many schema versions reaches.
var layouts struct {
	sync.Mutex
	m map[*arrow.Schema]*parquetfmt.Layout
}

const maxLayouts = 256

func layoutOf(schema *arrow.Schema) (*parquetfmt.Layout, error) {
	layouts.Lock()
	defer layouts.Unlock()
	if l, ok := layouts.m[schema]; ok {
		return l, nil
	}
	l, err := parquetfmt.NewLayout(schema)
	if err != nil {
		return nil, err
	}
	if layouts.m == nil || len(layouts.m) >= maxLayouts {
		layouts.m = make(map[*arrow.Schema]*parquetfmt.Layout)
	}
	layouts.m[schema] = l
	return l, nil
}
