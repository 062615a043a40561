package decode

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// Every mapped key is found by the frozen key tables, whatever slot it
// landed in, however it is written in the payload; keys that are not
// mapped are not; and the last of duplicate keys wins, as in
// encoding/json.
func TestDecodeFindsEveryMappedKey(t *testing.T) {
	// Keys of every sort: many alike (field_000...), long ones that differ
	// only in the middle, escaped and unicode keys, one key under two
	// parents, and the empty key.
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("field_%03d", i))
	}
	for i := range 20 {
		keys = append(keys, "a_long_common_prefix_"+strconv.Itoa(i)+"_and_a_long_common_suffix")
	}
	keys = append(keys, `quo"te`, `back\slash`, "tab\there", "zürich", "☃", "日本語のキー", "")

	var fields []iceberg.NestedField
	mapping := map[string]string{}
	want := Row{}
	var doc strings.Builder
	doc.WriteString(`{"decoy_first":1,`)
	for i, k := range keys {
		name := "c" + strconv.Itoa(i)
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: name, Type: iceberg.PrimitiveTypes.String})
		mapping[name] = strconv.Quote(k) // a quoted JMESPath identifier is a JSON string
		want = append(want, "v"+strconv.Itoa(i))
		// Every third key is written with each character escaped as \uXXXX,
		// so its bytes in the payload differ from the mapped name.
		if i%3 == 0 {
			doc.WriteString(`"`)
			for _, r := range k {
				if r > 0xFFFF {
					t.Fatalf("test key %q needs surrogate pairs", k)
				}
				fmt.Fprintf(&doc, `\u%04x`, r)
			}
			doc.WriteString(`"`)
		} else {
			fmt.Fprintf(&doc, "%q", k)
		}
		fmt.Fprintf(&doc, `:"v%d",`, i)
		// A decoy next to every key: same prefix, not mapped.
		fmt.Fprintf(&doc, `%q:"decoy",`, k+"x")
	}
	// The same names one level down, and a duplicated object whose last
	// occurrence wins whole.
	n := len(keys)
	for j, k := range []string{"field_000", "zürich"} {
		name := "nested" + strconv.Itoa(j)
		fields = append(fields, iceberg.NestedField{ID: n + j + 1, Name: name, Type: iceberg.PrimitiveTypes.String})
		mapping[name] = "obj." + strconv.Quote(k)
	}
	fields = append(fields, iceberg.NestedField{ID: n + 3, Name: "dup", Type: iceberg.PrimitiveTypes.String})
	mapping["dup"] = "dup"
	doc.WriteString(`"obj":{"field_000":"stale","zürich":"stale"},"dup":"first",`)
	doc.WriteString(`"obj":{"zürich":"fresh"},"dup":"last","decoy_last":{}}`)
	want = append(want, nil, "fresh", "last")

	d, err := New(iceberg.NewSchema(0, fields...), mapping)
	if err != nil {
		t.Fatal(err)
	}
	if d.root == nil {
		t.Fatal("mapping not read as plain paths")
	}
	// The table must really have collided keys, or this test proves
	// nothing about probing.
	moved := 0
	slots := d.root.keys.slots
	for i, s := range slots {
		if s.child != nil && s.hash&uint64(len(slots)-1) != uint64(i) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("no key of %d left its home slot: the test needs colliding keys", len(keys))
	}

	row, err := d.DecodeInto(nil, []byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !reflect.DeepEqual(row[i], want[i]) {
			t.Errorf("column %s (key %q): got %#v, want %#v", fields[i].Name, keyOf(keys, i), row[i], want[i])
		}
	}

	for _, k := range keys {
		if d.root.keys.find(k) == nil {
			t.Errorf("key %q not found in its table", k)
		}
		for _, absent := range []string{k + "x", "x" + k, strings.ToUpper(k) + "!"} {
			if d.root.keys.find(absent) != nil {
				t.Errorf("key %q, not mapped, found", absent)
			}
		}
	}
}

func keyOf(keys []string, i int) string {
	if i < len(keys) {
		return keys[i]
	}
	return "(nested)"
}
