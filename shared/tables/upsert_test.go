package tables

import (
	"context"
	"slices"
	"testing"

	"github.com/icewal/ingestor/shared/config"
)

// TestCreateUpsertTableSetsItsKeys: a table the ingestor creates for an
// upsert dataset has the key columns required, even where create.columns
// left them optional, and as its identifier fields, which engines read as
// the table's key.
func TestCreateUpsertTableSetsItsKeys(t *testing.T) {
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := config.Dataset{Name: "orders", Topic: "orders", Table: "shop.orders",
		Upsert: &config.Upsert{KeyColumns: []string{"region", "order_id"}},
		Create: &config.CreateTable{Columns: []config.Column{
			{Name: "order_id", Type: "long", Required: true},
			{Name: "region", Type: "string"},
			{Name: "amount", Type: "double"},
		}, Partition: []config.PartitionField{{Column: "region"}}},
	}
	tbl, err := Load(context.Background(), cat, d)
	if err != nil {
		t.Fatal(err)
	}
	s := tbl.Schema()
	if got := s.IdentifierFieldIDs; !slices.Equal(slices.Sorted(slices.Values(got)), []int{1, 2}) {
		t.Errorf("identifier fields %v, want [1 2]", got)
	}
	if f, _ := s.FindFieldByName("region"); !f.Required {
		t.Error("key column region is optional in the created table")
	}
	if f, _ := s.FindFieldByName("amount"); f.Required {
		t.Error("amount, not a key, was made required")
	}
	if _, err := UpsertKeys(d, s, tbl.Spec()); err != nil {
		t.Errorf("the created table cannot carry its own keys: %v", err)
	}
}
