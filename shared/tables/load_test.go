package tables

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
)

func eventsDataset() config.Dataset {
	return config.Dataset{
		Name:  "events",
		Topic: "events",
		Table: "analytics.events",
		Create: &config.CreateTable{
			Columns: []config.Column{
				{Name: "id", Type: "string", Required: true},
				{Name: "ts", Type: "timestamptz"},
				{Name: "amount", Type: "decimal(12,2)"},
				{Name: "tags", Type: "list<string>"},
				{Name: "attrs", Type: "map<string,string>"},
				{Name: "geo", Type: "struct<lat:double,lon:double>"},
			},
			Partition: []config.PartitionField{
				{Column: "ts", Transform: "day"},
				{Column: "id", Transform: "bucket[8]", Name: "id_b"},
			},
			Properties: map[string]string{"write.parquet.compression-codec": "zstd"},
		},
	}
}

func TestTablesLoadCreates(t *testing.T) {
	ctx := context.Background()
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := eventsDataset()

	tbl, err := Load(ctx, cat, d)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if v := tbl.Metadata().Version(); v != 2 {
		t.Errorf("format version %d, want 2", v)
	}
	schema := tbl.Schema()
	for _, c := range d.Create.Columns {
		f, ok := schema.FindFieldByName(c.Name)
		if !ok {
			t.Fatalf("column %s missing from %s", c.Name, schema)
		}
		want, err := ParseType(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		if shape(f.Type) != shape(want) || f.Required != c.Required {
			t.Errorf("column %s: %s required=%v, want %s required=%v", c.Name, shape(f.Type), f.Required, shape(want), c.Required)
		}
	}
	spec := tbl.Spec()
	if spec.NumFields() != 2 {
		t.Fatalf("spec %s, want 2 fields", spec)
	}
	f0, f1 := spec.Field(0), spec.Field(1)
	ts, _ := schema.FindFieldByName("ts")
	id, _ := schema.FindFieldByName("id")
	if f0.Name != "ts_day" || f0.SourceID() != ts.ID || f0.Transform.String() != "day" {
		t.Errorf("field 0 = %s, want ts_day: day(ts)", f0.String())
	}
	if f1.Name != "id_b" || f1.SourceID() != id.ID || f1.Transform.String() != "bucket[8]" {
		t.Errorf("field 1 = %s, want id_b: bucket[8](id)", f1.String())
	}
	if got := tbl.Properties()["write.parquet.compression-codec"]; got != "zstd" {
		t.Errorf("property write.parquet.compression-codec = %q, want zstd", got)
	}
	// The upkeep properties, among them the size compaction packs toward,
	// stated for every engine that compacts or plans the table.
	for k, want := range map[string]string{
		"write.metadata.delete-after-commit.enabled": "true",
		"write.metadata.previous-versions-max":       "20",
		"commit.manifest-merge.enabled":              "true",
		"write.target-file-size-bytes":               "134217728",
	} {
		if got := tbl.Properties()[k]; got != want {
			t.Errorf("property %s = %q, want %q", k, got, want)
		}
	}

	// A second Load finds the same table instead of creating another.
	again, err := Load(ctx, cat, d)
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if again.Metadata().TableUUID() != tbl.Metadata().TableUUID() {
		t.Errorf("second Load returned another table")
	}
}

func TestTablesLoadMissingTable(t *testing.T) {
	ctx := context.Background()
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := eventsDataset()
	d.Create = nil
	_, err := Load(ctx, cat, d)
	if err == nil {
		t.Fatal("Load of a missing table without create succeeded")
	}
	for _, want := range []string{"dataset events", "analytics.events", "does not exist", "datasets[].create"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		t.Errorf("error %v does not wrap the catalog's not-found error", err)
	}
}

func TestTablesLoadRejectsFormatV3(t *testing.T) {
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := eventsDataset()
	d.Create.Properties = map[string]string{"format-version": "3"}
	if _, err := Load(context.Background(), cat, d); err == nil || !strings.Contains(err.Error(), "format-version=3") {
		t.Fatalf("Load with format-version 3: %v, want an error naming it", err)
	}
}

// Two processes starting at once both try to create the table: both must
// end with the same table.
func TestTablesLoadConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	c := sqliteCatalog(t.TempDir())
	cats := []catalog.Catalog{openCatalog(t, c), openCatalog(t, c), openCatalog(t, c), openCatalog(t, c)}
	tbls := make([]*table.Table, len(cats))
	errs := make([]error, len(cats))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range cats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tbls[i], errs[i] = Load(ctx, cats[i], eventsDataset())
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Load %d: %v", i, err)
		}
	}
	for i, tbl := range tbls {
		if tbl.Metadata().TableUUID() != tbls[0].Metadata().TableUUID() {
			t.Errorf("Load %d returned table %s, Load 0 %s", i, tbl.Metadata().TableUUID(), tbls[0].Metadata().TableUUID())
		}
	}
}

func TestTablesSQLitePragmas(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"file:/x/c.db", "file:/x/c.db?" + sqlitePragmas},
		{"file:/x/c.db?mode=rwc", "file:/x/c.db?mode=rwc&" + sqlitePragmas},
		{"file:/x/c.db?_pragma=busy_timeout(100)", "file:/x/c.db?_pragma=busy_timeout(100)"},
	} {
		if got := withSQLitePragmas(tc.in); got != tc.want {
			t.Errorf("withSQLitePragmas(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// The pragmas reach the catalog: WAL journaling leaves a -wal file.
	dir := t.TempDir()
	cat := openCatalog(t, sqliteCatalog(dir))
	if _, err := Load(context.Background(), cat, eventsDataset()); err != nil {
		t.Fatal(err)
	}
	if matches, _ := globWAL(dir); len(matches) == 0 {
		t.Errorf("no catalog.db-wal in %s: journal_mode(WAL) not applied", dir)
	}
}

func TestTablesOpenCatalogHidesSecrets(t *testing.T) {
	ctx := context.Background()
	cases := []config.Catalog{
		{Name: "pg", Properties: map[string]string{
			"type": "sql", "sql.driver": "pgx", "sql.dialect": "postgres",
			"uri": "postgres://ingestor:S3cretPassw0rd@127.0.0.1:1/nodb?connect_timeout=2",
		}},
		{Name: "pgkv", Properties: map[string]string{
			"type": "sql", "sql.driver": "pgx", "sql.dialect": "postgres",
			"uri": "host=127.0.0.1 port=1 user=ingestor password=S3cretPassw0rd dbname=x connect_timeout=2",
		}},
		{Name: "rest", Properties: map[string]string{
			"type": "rest", "uri": "http://127.0.0.1:1/S3cretPassw0rd", "credential": "client:S3cretPassw0rd",
			"token": "S3cretPassw0rd", "adls.auth.shared-key.account.key": "S3cretPassw0rd",
		}},
		{Name: "nodriver", Properties: map[string]string{
			"type": "sql", "sql.driver": "nosuchdriver", "sql.dialect": "sqlite",
			"uri": "S3cretPassw0rd", "adls.sas-token.acct": "S3cretPassw0rd",
		}},
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			cat, err := OpenCatalog(ctx, c)
			if err == nil {
				if cl, ok := cat.(catalog.Closer); ok {
					cl.Close()
				}
				// A catalog that opens without connecting checks nothing
				// here: the case must be one whose opening fails.
				t.Fatal("catalog opened without connecting; pick properties that make it fail")
			}
			t.Logf("error: %v", err)
			if strings.Contains(err.Error(), "S3cretPassw0rd") {
				t.Fatalf("error shows a secret: %v", err)
			}
			if !strings.Contains(err.Error(), c.Name) {
				t.Errorf("error %q does not name catalog %s", err, c.Name)
			}
		})
	}
	props := iceberg.Properties{
		"uri":                 "postgres://u:pw123456@db.example/cat",
		"adls.sas-token.acct": "sv=2024&sig=abcdefgh",
		"credential":          "id:clientsecret",
	}
	leaky := errors.New("dial postgres://u:pw123456@db.example/cat: sas sv=2024&sig=abcdefgh creds id:clientsecret")
	msg := maskError(leaky, props).Error()
	for _, s := range []string{"pw123456", "abcdefgh", "clientsecret"} {
		if strings.Contains(msg, s) {
			t.Errorf("redacted error %q still shows %q", msg, s)
		}
	}
	if !strings.Contains(msg, "db.example") {
		t.Errorf("redacted error %q lost the host", msg)
	}
	// The sentinel stays reachable for errors.Is; the raw error, whose
	// text holds the secrets, does not.
	err := maskError(fmt.Errorf("load: %w", iceberg.ErrInvalidArgument), iceberg.Properties{"token": "abcdef"})
	if !errors.Is(err, iceberg.ErrInvalidArgument) {
		t.Errorf("redacted error lost its cause")
	}
	if errors.Is(maskError(leaky, props), leaky) {
		t.Error("redacted error unwraps to the raw error")
	}
}
