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
		{"the hour before 1970", Row{"acme", ts(-1, 0), int64(7)}, -1},
		{"its last microsecond", Row{"acme", ts(-1, hour-1), int64(7)}, 10},
		{"the hour before it", Row{"acme", ts(-1, -1), int64(7)}, -1},
		{"the first hour of 1970", Row{"acme", ts(0, 0), int64(7)}, -1},
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

// TestPartitionKeyAllocatesNothing: finding the segment of a row of a
// table partitioned by tenant and hour (the bench's, and the usual time
// series) allocates nothing per record.
func TestPartitionKeyAllocatesNothing(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	for _, tr := range []iceberg.Transform{iceberg.HourTransform{}, iceberg.DayTransform{}} {
		spec := iceberg.NewPartitionSpecID(0,
			iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "tenant", Transform: iceberg.IdentityTransform{}},
			iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "ts_part", Transform: tr},
		)
		p, err := newPartitioner(schema, &spec)
		if err != nil {
			t.Fatal(err)
		}
		row := Row{"acme", arrow.Timestamp(1_765_000_000_000_000)}
		key := make([]byte, 0, 64)
		allocs := testing.AllocsPerRun(100, func() {
			if key, err = p.appendKey(key[:0], row); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a row, want 0", tr, allocs)
		}
	}
}

// TestPartitionKeyDays: rows share a day key exactly when iceberg-go's
// day transform gives them the same day, before 1970 too.
func TestPartitionKeyDays(t *testing.T) {
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp})
	spec := iceberg.NewPartitionSpecID(0,
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})
	p, err := newPartitioner(schema, &spec)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * int64(3_600_000_000)
	times := []int64{-day - 1, -day, -1, 0, 1, day - 1, day, 20_000*day + 5}
	for _, a := range times {
		for _, b := range times {
			ka, err := p.appendKey(nil, Row{arrow.Timestamp(a)})
			if err != nil {
				t.Fatal(err)
			}
			kb, _ := p.appendKey(nil, Row{arrow.Timestamp(b)})
			va, _ := p.values(Row{arrow.Timestamp(a)})
			vb, _ := p.values(Row{arrow.Timestamp(b)})
			if same := va[1000] == vb[1000]; same != (string(ka) == string(kb)) {
				t.Errorf("%d and %d: days %v and %v, keys %q and %q", a, b, va[1000], vb[1000], ka, kb)
			}
		}
	}
}
