package consumer

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// TestPartitionKey checks the segment key of a row against its partition
// values: rows with equal values share a key, rows with different values
// (including a null against the text "<nil>") do not, and the values are
// those of iceberg-go's transforms.
func TestPartitionKey(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "shard", Type: iceberg.PrimitiveTypes.Int64},
	)
	spec := iceberg.NewPartitionSpecID(0,
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "tenant", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "ts_hour", Transform: iceberg.HourTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1002, Name: "shard_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}},
	)
	p, err := newPartitioner(schema, &spec)
	if err != nil {
		t.Fatal(err)
	}
	const hour = int64(3_600_000_000)
	ts := func(h int64, extra int64) arrow.Timestamp { return arrow.Timestamp(h*hour + extra) }
	rows := []struct {
		name string
		row  Row
		same int // index of an earlier row with the same partition, or -1
	}{
		{"a", Row{"acme", ts(500_000, 0), int64(7)}, -1},
		{"same hour, same bucket", Row{"acme", ts(500_000, hour-1), int64(7)}, 0},
		{"next hour", Row{"acme", ts(500_001, 0), int64(7)}, -1},
		{"other tenant", Row{"globex", ts(500_000, 0), int64(7)}, -1},
		{"null tenant", Row{nil, ts(500_000, 0), int64(7)}, -1},
		{"tenant named <nil>", Row{"<nil>", ts(500_000, 0), int64(7)}, -1},
		{"tenant named n", Row{"n", ts(500_000, 0), int64(7)}, -1},
		{"tenant holding a separator", Row{"acme;i500000;", nil, int64(7)}, -1},
		{"empty tenant", Row{"", ts(500_000, 0), int64(7)}, -1},
		{"null time", Row{"acme", nil, int64(7)}, -1},
	}
	keys := map[string]int{}
	for i, r := range rows {
		k, err := p.appendKey(nil, r.row)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		prev, seen := keys[string(k)]
		switch {
		case r.same >= 0 && (!seen || prev != r.same):
			t.Errorf("%s: key %q, want the key of %q", r.name, k, rows[r.same].name)
		case r.same < 0 && seen:
			t.Errorf("%s: key %q is also the key of %q", r.name, k, rows[prev].name)
		}
		if !seen {
			keys[string(k)] = i
		}
		vals, err := p.values(r.row)
		if err != nil {
			t.Fatalf("%s: values: %v", r.name, err)
		}
		for _, f := range spec.Fields() {
			var want any
			src := r.row[f.SourceID()-1]
			if src != nil {
				lit, err := literalOf(src, schema.Field(f.SourceID()-1).Type)
				if err != nil {
					t.Fatal(err)
				}
				if res := f.Transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true}); res.Valid {
					want = res.Val.Any()
				}
			}
			if got := vals[f.FieldID]; got != want {
				t.Errorf("%s: %s = %v (%T), want %v (%T)", r.name, f.Name, got, got, want, want)
			}
		}
	}
}
