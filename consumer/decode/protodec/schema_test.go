package protodec

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestTableSchema checks the columns a table built from a message gets:
// each type of the mapping, required where the field always has a value,
// field ids from 1, a struct's fields numbered before what nests in them.
func TestTableSchema(t *testing.T) {
	s, err := TableSchema(allMessage(t))
	if err != nil {
		t.Fatal(err)
	}
	want := `table {
	1: i32: required int
	2: si32: required int
	3: sf32: required int
	4: i64: required long
	5: si64: required long
	6: sf64: required long
	7: u32: required long
	8: f32: required long
	9: u64: required decimal(20, 0)
	10: f64: required decimal(20, 0)
	11: fl: required float
	12: db: required double
	13: b: required boolean
	14: s: required string
	15: by: required binary
	16: color: required string
	17: opt: optional long
	18: inner: optional struct<41: label: required string, 42: n: required int, 43: leaf: optional struct<44: text: required string, 45: weight: optional double>>
	19: nums: required list<long>
	20: tags: required list<string>
	21: inners: required list<struct<49: label: required string, 50: n: required int, 51: leaf: optional struct<52: text: required string, 53: weight: optional double>>>
	22: counts: required map<string, long>
	23: by_id: required map<int, struct<58: label: required string, 59: n: required int, 60: leaf: optional struct<61: text: required string, 62: weight: optional double>>>
	24: ts: optional timestamptz
	25: day: optional date
	26: w_i64: optional long
	27: w_s: optional string
	28: w_d: optional double
	29: w_b: optional boolean
	30: w_u64: optional decimal(20, 0)
	31: ref: optional struct<63: id: required string>
	32: name: optional string
	33: number: optional int
	34: packed_s: required list<int>
	35: packed_d: required list<double>
	36: w_by: optional binary
	37: w_f: optional float
	38: w_i32: optional int
	39: w_u32: optional long
	40: big_number: required long
}`
	if got := s.String(); got != want {
		t.Errorf("schema:\n%s\nwant:\n%s", got, want)
	}
	nums, _ := s.FindFieldByName("nums")
	if l := nums.Type.(*iceberg.ListType); l.ElementID != 46 || !l.ElementRequired {
		t.Errorf("nums: element id %d required %v, want 46 true", l.ElementID, l.ElementRequired)
	}
	byID, _ := s.FindFieldByName("by_id")
	if m := byID.Type.(*iceberg.MapType); m.KeyID != 56 || m.ValueID != 57 || m.ValueRequired {
		t.Errorf("by_id: key id %d value id %d value required %v, want 56 57 false", m.KeyID, m.ValueID, m.ValueRequired)
	}
	// Field ids are 1 to 65, each once.
	idx, err := iceberg.IndexByID(s)
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 65; id++ {
		if _, ok := idx[id]; !ok {
			t.Errorf("no field has id %d", id)
		}
	}
	if len(idx) != 65 {
		t.Errorf("%d field ids, want 65", len(idx))
	}
}

// TestTableSchemaRecursive: a message that contains itself has no table
// schema, and the error names the field.
func TestTableSchemaRecursive(t *testing.T) {
	fd := compile(t, `syntax = "proto3";
message Node { string name = 1; Child child = 2; }
message Child { Node back = 1; }`, nil)
	_, err := TableSchema(fd.Messages().ByName("Node"))
	if err == nil || !strings.Contains(err.Error(), `"child.back"`) {
		t.Fatalf("err = %v, want the recursion named at child.back", err)
	}
}
