package decode

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// After a visit only the pending and the required columns are looked at
// again; on a table wider than the reader's converted set, with columns on
// the bounds of its words, the rows and the errors (the first failing
// column in schema order) are those of the whole-document decode, which
// converts every column.
func TestDecodeWideConvertsPendingAlike(t *testing.T) {
	const n = maxConverted + 44
	edges := map[int]bool{0: true, 63: true, 64: true, 127: true, 128: true, 255: true, 256: true, 257: true, n - 1: true}
	var fields []iceberg.NestedField
	mapping := map[string]string{}
	for i := range n {
		typ := iceberg.Type(iceberg.PrimitiveTypes.Int32)
		if i%5 == 0 {
			typ = &iceberg.ListType{ElementID: 1000 + i, Element: iceberg.PrimitiveTypes.Int32}
		}
		name := "c" + strconv.Itoa(i)
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: name, Type: typ, Required: edges[i]})
		mapping[name] = name
	}
	d, err := New(iceberg.NewSchema(0, fields...), mapping)
	if err != nil {
		t.Fatal(err)
	}
	whole := *d
	whole.root = nil

	value := func(i int, bad int) string {
		switch {
		case i == bad:
			return `"not a number"`
		case i%5 == 0:
			return fmt.Sprintf("[%d]", i)
		case i%7 == 0:
			return strconv.Quote(strconv.Itoa(i)) // converts, from a string
		}
		return strconv.Itoa(i)
	}
	doc := func(skip, bad int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i == skip {
				continue
			}
			if b.Len() > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"c%d":%s`, i, value(i, bad))
		}
		b.WriteString("}")
		return b.String()
	}
	docs := []string{doc(-1, -1)}
	for e := range edges {
		docs = append(docs, doc(e, -1), doc(-1, e), doc(-1, e+1), doc(e+1, e))
	}
	docs = append(docs, doc(-1, 300), doc(-1, 10), doc(-1, 65), `{}`, `{"c0":[1]}`)
	var row, ref Row
	for _, doc := range docs {
		var gerr, rerr error
		row, gerr = d.DecodeInto(row, []byte(doc))
		ref, rerr = whole.DecodeInto(ref, []byte(doc))
		if fmt.Sprint(gerr) != fmt.Sprint(rerr) || fmt.Sprintf("%#v", row) != fmt.Sprintf("%#v", ref) {
			t.Errorf("%.80s...:\nvisit %.200v, %v\nwhole %.200v, %v", doc, row, gerr, ref, rerr)
		}
		if gerr != nil {
			row, ref = nil, nil
		}
	}
	if _, err := d.DecodeInto(nil, []byte(doc(-1, -1))); err != nil {
		t.Errorf("complete document: %v", err)
	}
}
