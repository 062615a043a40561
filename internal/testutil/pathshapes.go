package testutil

import (
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// PathShape is one event shape of the decode -> Parquet micro-benchmarks:
// the table and distinct events of devenv's generator, the one
// `ingestor bench` uses.
type PathShape struct {
	Name     string
	Schema   *iceberg.Schema
	Mapping  map[string]string
	Payloads [][]byte // 2 * PathRows distinct events
	Bytes    int64    // their total size
}

// PathRows is the number of rows per Arrow record batch and Parquet row
// group in the micro-benchmarks, as in a WAL segment.
const PathRows = 16384

var (
	pathShapesOnce sync.Once
	pathShapes     []*PathShape
	pathShapesErr  error
)

// PathShapes makes the narrow and wide events once per test binary.
func PathShapes(tb testing.TB) []*PathShape {
	tb.Helper()
	pathShapesOnce.Do(func() {
		ten, err := devenv.NewTenancy(devenv.KeysUniform, 64)
		if err != nil {
			pathShapesErr = err
			return
		}
		base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for _, name := range []string{devenv.ShapeNarrow, devenv.ShapeWide} {
			sh, err := devenv.ShapeByName(name)
			if err != nil {
				pathShapesErr = err
				return
			}
			schema, err := tables.BuildSchema(sh.Columns)
			if err != nil {
				pathShapesErr = err
				return
			}
			ps := &PathShape{Name: name, Schema: schema, Mapping: sh.Mapping}
			for seq := int64(0); seq < 2*PathRows; seq++ {
				p := sh.Append(nil, devenv.EventID(1, seq), ten.Name(ten.Of(seq)), seq, base.Add(time.Duration(seq)*time.Millisecond))
				ps.Payloads = append(ps.Payloads, p)
				ps.Bytes += int64(len(p))
			}
			pathShapes = append(pathShapes, ps)
		}
	})
	if pathShapesErr != nil {
		tb.Fatal(pathShapesErr)
	}
	return pathShapes
}
