package tableview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// Rows are the first rows of a table: the column names in schema order
// and each row's values in that order, as encoding/json writes them
// (nested values as maps and slices, timestamps as text).
type Rows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// Head reads up to limit rows of the current snapshot with iceberg-go's
// scan to Arrow, which stops planning and reading once it has them. Which
// rows come first is the scan's order, not an order of the table.
func (v *View) Head(ctx context.Context, limit int64) (*Rows, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("limit %d: want a positive number of rows", limit)
	}
	out := &Rows{Rows: [][]any{}}
	for _, f := range v.tbl.Schema().Fields() {
		out.Columns = append(out.Columns, f.Name)
	}
	if v.tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	scan := v.tbl.Scan(table.WithLimit(limit))
	defer scan.Close()
	sc, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, v.err(fmt.Errorf("scan table %s: %w", v.Dataset.Table, err))
	}
	out.Columns = out.Columns[:0]
	for _, f := range sc.Fields() {
		out.Columns = append(out.Columns, f.Name)
	}
	for rec, err := range batches {
		if err != nil {
			return nil, v.err(fmt.Errorf("read table %s: %w", v.Dataset.Table, err))
		}
		for i := 0; i < int(rec.NumRows()) && int64(len(out.Rows)) < limit; i++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				if row[c], err = detach(rec.Column(c).GetOneForMarshal(i)); err != nil {
					rec.Release()
					return nil, fmt.Errorf("column %s: %w", out.Columns[c], err)
				}
			}
			out.Rows = append(out.Rows, row)
		}
		rec.Release()
		if int64(len(out.Rows)) >= limit {
			break
		}
	}
	return out, nil
}

// detach copies a value out of the Arrow buffers it may point into (a
// string value shares the array's memory, which the release of the
// batch hands back to the allocator). Numbers stay exact as json.Number.
func detach(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}
