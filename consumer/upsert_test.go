package consumer

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
)

func upsertSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "meta", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "op", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
}

// TestUpserterRecognisesDeletes: a value whose deleteWhen path holds one
// of the values, and a tombstone whose Kafka key is the key or a JSON
// object of the keys, give a delete row holding the key, the required
// column's zero and nulls; other values are not deletes; a tombstone
// without a usable key is a drop with its reason.
func TestUpserterRecognisesDeletes(t *testing.T) {
	ds := config.Dataset{Name: "orders", Table: "shop.orders", Upsert: &config.Upsert{
		KeyColumns: []string{"order_id"},
		DeleteWhen: &config.DeleteWhen{Path: "meta.op", Equals: []string{"d", "delete"}},
	}}
	u, err := newUpserter(ds, jsonFormat(nil), upsertSchema(), *iceberg.UnpartitionedSpec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value string
		del   bool
	}{
		{`{"order_id": 7, "meta": {"op": "d"}}`, true},
		{`{"order_id": 7, "status": "x", "meta": {"op": "delete"}}`, true},
		{`{"order_id": 7, "status": "x", "meta": {"op": "u"}}`, false},
		{`{"order_id": 7, "status": "x"}`, false},
		{`{"meta": {"op": "d"}}`, false}, // no key: the table's decoder drops it
	} {
		row, err := u.deleteOf([]byte(tc.value), 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		if (row != nil) != tc.del {
			t.Fatalf("%s: delete = %v, want %v", tc.value, row != nil, tc.del)
		}
		if row != nil && (row[0] != int64(7) || row[1] != "" || row[2] != nil || row[3] != nil) {
			t.Fatalf("%s: delete row %v, want [7 \"\" <nil> <nil>]", tc.value, row)
		}
	}
	for _, key := range []string{"7", `{"order_id": 7}`} {
		row, err := u.tombstone([]byte(key))
		if err != nil || row[0] != int64(7) {
			t.Fatalf("tombstone with key %s: row %v, err %v", key, row, err)
		}
	}
	for key, reason := range map[string]string{"": decode.ReasonMissingRequired, "seven": decode.ReasonConvert, `{"id": 7}`: decode.ReasonMissingRequired} {
		_, err := u.tombstone([]byte(key))
		var de *decode.Error
		if !errors.As(err, &de) || de.Reason != reason {
			t.Errorf("tombstone with key %q: err %v, want a %s drop", key, err, reason)
		}
	}
}

// TestUpsertRefusesATableThatCannotCarryKeys: the start fails, naming the
// key, for a key column that is optional, missing or floating point, and
// for a table partitioned by a column that is not a key.
func TestUpsertRefusesATableThatCannotCarryKeys(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "opt", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "score", Type: iceberg.PrimitiveTypes.Float64, Required: true},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
	byTs := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "ts_hour", Transform: iceberg.HourTransform{}})
	byID := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 8}})
	for _, tc := range []struct {
		keys []string
		spec iceberg.PartitionSpec
		want string
	}{
		{[]string{"opt"}, *iceberg.UnpartitionedSpec, `datasets[orders].upsert.keyColumns[0]: column "opt" of table shop.orders is optional`},
		{[]string{"nope"}, *iceberg.UnpartitionedSpec, `datasets[orders].upsert.keyColumns[0]: "nope" is not a top-level column`},
		{[]string{"id", "score"}, *iceberg.UnpartitionedSpec, `datasets[orders].upsert.keyColumns[1]: column "score" is double: floating point cannot be a key`},
		{[]string{"id"}, byTs, `table shop.orders is partitioned by ts_hour (hour of column ts), which is not a key column`},
		{[]string{"id"}, byID, ""},
	} {
		ds := config.Dataset{Name: "orders", Table: "shop.orders", Upsert: &config.Upsert{KeyColumns: tc.keys}}
		_, err := newUpserter(ds, jsonFormat(nil), schema, tc.spec)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("keys %v: %v", tc.keys, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("keys %v: err %v, want it to say %q", tc.keys, err, tc.want)
		}
	}
}

// TestUpserterComparesTheKafkaKey: a plain Kafka key that is not the row's
// one key column is a mismatch; a JSON or empty key is not compared.
func TestUpserterComparesTheKafkaKey(t *testing.T) {
	ds := config.Dataset{Name: "orders", Table: "shop.orders", Upsert: &config.Upsert{KeyColumns: []string{"order_id"}}}
	u, err := newUpserter(ds, jsonFormat(nil), upsertSchema(), *iceberg.UnpartitionedSpec)
	if err != nil {
		t.Fatal(err)
	}
	row := Row{int64(7), "x", nil, nil}
	for key, want := range map[string]bool{"7": true, "8": false, "seven": false, "": true, `{"order_id": 8}`: true} {
		if got := u.keyMatches([]byte(key), row); got != want {
			t.Errorf("Kafka key %q for order 7: match %v, want %v", key, got, want)
		}
	}
}
