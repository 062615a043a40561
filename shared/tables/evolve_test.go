package tables

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/shared/config"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// withColumns returns d with its create block's columns replaced.
func withColumns(d config.Dataset, cols ...config.Column) config.Dataset {
	c := *d.Create
	c.Columns = cols
	d.Create = &c
	return d
}

// TestTablesEvolveAddsConfiguredColumns: a column added to the create
// block of a dataset whose table exists is added to the table with a new
// field id, the existing ids unchanged; a second start changes nothing; a
// type widened in the configuration is widened in the table, and a
// column the configuration no longer lists stays.
func TestTablesEvolveAddsConfiguredColumns(t *testing.T) {
	ctx := context.Background()
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := eventsDataset()
	tbl, err := Load(ctx, cat, d)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]int{}
	for _, f := range tbl.Schema().Fields() {
		before[f.Name] = f.ID
	}
	cols := append([]config.Column{}, d.Create.Columns...)
	cols = append(cols, config.Column{Name: "country", Type: "string"}, config.Column{Name: "visits", Type: "int"})
	d = withColumns(d, cols...)

	tbl, err = Evolve(ctx, cat, tbl, d, quiet)
	if err != nil {
		t.Fatalf("Evolve: %v", err)
	}
	tbl, err = cat.LoadTable(ctx, tbl.Identifier()) // what the catalog holds, not the returned copy
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range before {
		if f, ok := tbl.Schema().FindFieldByName(name); !ok || f.ID != id {
			t.Errorf("column %s: %v, want field id %d kept", name, f, id)
		}
	}
	country, ok := tbl.Schema().FindFieldByName("country")
	if !ok || country.Required || !country.Type.Equals(iceberg.PrimitiveTypes.String) {
		t.Fatalf("country = %v (found %v), want an optional string", country, ok)
	}
	if _, used := idsOf(before)[country.ID]; used {
		t.Errorf("country got field id %d, already used", country.ID)
	}
	schemaID := tbl.Schema().ID

	// A second start with the same configuration: no new schema.
	if tbl, err = Evolve(ctx, cat, tbl, d, quiet); err != nil {
		t.Fatal(err)
	}
	if tbl.Schema().ID != schemaID {
		t.Errorf("schema id %d after a start with nothing to change, want %d", tbl.Schema().ID, schemaID)
	}

	// int widened to long; the first column left out of the configuration.
	cols[len(cols)-1].Type = "long"
	if tbl, err = Evolve(ctx, cat, tbl, withColumns(d, cols[1:]...), quiet); err != nil {
		t.Fatal(err)
	}
	if f, _ := tbl.Schema().FindFieldByName("visits"); !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Errorf("visits is %s, want long", f.Type)
	}
	if _, ok := tbl.Schema().FindFieldByName(cols[0].Name); !ok {
		t.Errorf("column %s was dropped: the ingestor never drops a column", cols[0].Name)
	}
}

func idsOf(m map[string]int) map[int]string {
	out := map[int]string{}
	for k, v := range m {
		out[v] = k
	}
	return out
}

// TestTablesEvolveRefusesToNarrow: what would drop, narrow or change a
// column is a clear error naming it, and the table is left as it was.
func TestTablesEvolveRefusesToNarrow(t *testing.T) {
	ctx := context.Background()
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	base := eventsDataset()
	tbl, err := Load(ctx, cat, base)
	if err != nil {
		t.Fatal(err)
	}
	with := func(i int, c config.Column) config.Dataset {
		cols := append([]config.Column{}, base.Create.Columns...)
		if i < 0 {
			cols = append(cols, c)
		} else {
			cols[i] = c
		}
		return withColumns(base, cols...)
	}
	for _, tc := range []struct {
		name string
		d    config.Dataset
		want []string
	}{
		{"narrowed decimal", with(2, config.Column{Name: "amount", Type: "decimal(10,2)"}), []string{"column amount", "decimal(12, 2)", "decimal(10, 2)", "never narrows"}},
		{"changed type", with(1, config.Column{Name: "ts", Type: "string"}), []string{"column ts", "timestamptz", "string"}},
		{"made required", with(1, config.Column{Name: "ts", Type: "timestamptz", Required: true}), []string{"column ts", "optional in the table but required"}},
		{"new required column", with(-1, config.Column{Name: "country", Type: "string", Required: true}), []string{"column country", "marked required"}},
		{"nested field added", with(5, config.Column{Name: "geo", Type: "struct<lat:double,lon:double,alt:double>"}), []string{"column geo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Evolve(ctx, cat, tbl, tc.d, quiet)
			if err == nil {
				t.Fatal("Evolve accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			now, err := cat.LoadTable(ctx, tbl.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			if now.Schema().ID != tbl.Schema().ID {
				t.Errorf("schema changed to id %d after a refused change", now.Schema().ID)
			}
		})
	}
}
