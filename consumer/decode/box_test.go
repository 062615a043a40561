package decode

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// The values a visit converts are boxed in shared chunks of cells: every
// row, and every value copied out of a row whose scratch space is then
// reused, keeps its own values however many rows are decoded after it,
// over many chunks, for every boxed type.
func TestDecodeBoxedValuesStay(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 9, Name: "n", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 10, Name: "small", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 11, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
	)
	mapping := map[string]string{}
	for _, f := range schema.Fields() {
		mapping[f.Name] = "p." + f.Name
	}
	d, err := New(schema, mapping)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 10 * cellChunk
	doc := func(k int) string {
		return fmt.Sprintf(`{"p":{"s":"row %d","i":%d,"l":%d,"f":%d.5,"d":%d.25,"day":"1970-01-%02d","tod":"00:00:%02d","ts":%d,"n":%d,"small":%d,"bin":%q}}`,
			k, -1000-k, 1<<40+k, k, k, 1+k%28, k%60, 1000*k, 1e6+k, k%256, base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprint("bytes ", k))))
	}
	want := func(k int) Row {
		return Row{fmt.Sprintf("row %d", k), int32(-1000 - k), int64(1<<40 + k), float32(k) + 0.5, float64(k) + 0.25,
			arrow.Date32(k % 28), arrow.Time64(int64(k%60) * 1e6), arrow.Timestamp(int64(k) * 1e6),
			fmt.Sprint(1e6 + k), int64(k % 256), []byte(fmt.Sprint("bytes ", k))}
	}

	kept := make([]Row, rows)
	copied := make([]Row, rows)
	var scratch Row
	for k := range rows {
		if kept[k], err = d.DecodeInto(nil, []byte(doc(k))); err != nil {
			t.Fatal(err)
		}
		if scratch, err = d.DecodeInto(scratch, []byte(doc(k))); err != nil {
			t.Fatal(err)
		}
		copied[k] = append(Row(nil), scratch...)
	}
	for k := range rows {
		if w := want(k); !reflect.DeepEqual(kept[k], w) || !reflect.DeepEqual(copied[k], w) {
			t.Fatalf("row %d after %d more rows:\nkept   %#v\ncopied %#v\nwant   %#v", k, rows-k, kept[k], copied[k], w)
		}
	}
}
