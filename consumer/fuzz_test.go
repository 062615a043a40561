package consumer

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/decodetest"
)

// FuzzAppend feeds arbitrary payloads to a decoder of a schema with every
// type, as decode's FuzzDecode does, and wants every Row it returns to
// append to a RecordBuilder and give valid arrays. The seed corpus runs in
// every go test.
func FuzzAppend(f *testing.F) {
	for _, seed := range decodetest.FuzzSeeds() {
		f.Add(seed)
	}
	schema := decodetest.AllTypesSchema()
	mapping := decodetest.AllTypesMapping()
	mapping["name"] = "name || user.name" // one more expression for go-jmespath
	d, err := decode.New(schema, mapping)
	if err != nil {
		f.Fatal(err)
	}
	as, err := ArrowSchema(schema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		row, err := d.DecodeInto(nil, payload)
		if err != nil {
			return // decode's FuzzDecode checks the errors
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		AppendRow(b, row)
		AppendRow(b, row)
		rec := b.NewRecordBatch()
		defer rec.Release()
		for i, col := range rec.Columns() {
			if err := checkArray(col); err != nil {
				t.Fatalf("column %d: %v", i, err)
			}
		}
	})
}
