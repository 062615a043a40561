package tables

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
)

// formatVersion is the table format the ingestor creates. The committer adds
// files with AddDataFiles, which on format 3 needs first_row_id values that
// concurrent committers cannot agree on; format 2 has no such field.
const formatVersion = "2"

// Load loads the dataset's table. When the table does not exist and the
// dataset has a create block, Load creates the namespace (if needed) and
// the table, and tolerates another process creating either at the same
// moment. A missing table without a create block is an error that names the
// dataset and the table.
func Load(ctx context.Context, cat catalog.Catalog, d config.Dataset) (*table.Table, error) {
	ident := table.Identifier(d.TableIdent())
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil {
		return tbl, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, fmt.Errorf("load table %s of dataset %s: %w", d.Table, d.Name, err)
	}
	if d.Create == nil {
		return nil, fmt.Errorf("dataset %s: table %s does not exist: create it, or add datasets[].create to the configuration so that the ingestor creates it: %w",
			d.Name, d.Table, err)
	}
	if len(d.Create.Columns) == 0 {
		return nil, fmt.Errorf("dataset %s: table %s: %w", d.Name, d.Table, ErrNoWriterSchema)
	}
	return create(ctx, cat, d, nil)
}

// create creates the dataset's table, with the columns of its create
// block laid over from when from is set.
func create(ctx context.Context, cat catalog.Catalog, d config.Dataset, from *iceberg.Schema) (*table.Table, error) {
	ident := table.Identifier(d.TableIdent())
	schema, spec, props, err := createArgs(d.Create, from)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: create table %s: %w", d.Name, d.Table, err)
	}
	schema = withKeys(schema, d)
	if ns := catalog.NamespaceFromIdent(ident); len(ns) > 0 {
		if err := ensureNamespace(ctx, cat, ns); err != nil {
			return nil, fmt.Errorf("dataset %s: create table %s: %w", d.Name, d.Table, err)
		}
	}
	tbl, err := cat.CreateTable(ctx, ident, schema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err == nil {
		return tbl, nil
	}
	// Another process may have created the table since LoadTable: whatever
	// error the catalog gave for that race, the table loads now.
	if tbl, lerr := cat.LoadTable(ctx, ident); lerr == nil {
		return tbl, nil
	}
	return nil, fmt.Errorf("dataset %s: create table %s: %w", d.Name, d.Table, err)
}

// ensureNamespace creates ns unless it exists, tolerating a concurrent creator.
func ensureNamespace(ctx context.Context, cat catalog.Catalog, ns table.Identifier) error {
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("check namespace %s: %w", strings.Join(ns, "."), err)
	}
	if exists {
		return nil
	}
	err = cat.CreateNamespace(ctx, ns, nil)
	if err == nil || errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil
	}
	if exists, cerr := cat.CheckNamespaceExists(ctx, ns); cerr == nil && exists {
		return nil
	}
	return fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
}

// createArgs builds the schema, partition spec and properties of a create block.
func createArgs(c *config.CreateTable, from *iceberg.Schema) (*iceberg.Schema, iceberg.PartitionSpec, iceberg.Properties, error) {
	var schema *iceberg.Schema
	var err error
	if from != nil {
		schema, err = MergeSchema(from, c.Columns)
	} else {
		schema, err = BuildSchema(c.Columns)
	}
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, err
	}
	spec, err := BuildSpec(schema, c.Partition)
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, err
	}
	props := iceberg.Properties{}
	for k, v := range c.Properties {
		props[k] = v
	}
	for k, v := range UpkeepProperties {
		if _, set := props[k]; !set {
			props[k] = v
		}
	}
	switch v := props[table.PropertyFormatVersion]; v {
	case "":
		props[table.PropertyFormatVersion] = formatVersion
	case "1", "2":
	default:
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("property %s=%s: the ingestor writes format version 1 or 2 only (use %s)",
			table.PropertyFormatVersion, v, formatVersion)
	}
	return schema, spec, props, nil
}

// BuildSchema builds an Iceberg schema from a create block's columns. Top
// level columns get IDs 1..n in order, nested fields the IDs after them.
func BuildSchema(cols []config.Column) (*iceberg.Schema, error) {
	if len(cols) == 0 {
		return nil, errors.New("no columns")
	}
	next := len(cols) + 1
	fields := make([]iceberg.NestedField, 0, len(cols))
	seen := map[string]bool{}
	for i, c := range cols {
		if c.Name == "" {
			return nil, fmt.Errorf("column %d: no name", i)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("column %s appears twice", c.Name)
		}
		seen[c.Name] = true
		t, err := parseTypeIDs(c.Type, &next)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: c.Name, Type: t, Required: c.Required})
	}
	return iceberg.NewSchema(0, fields...), nil
}

// BuildSpec builds a partition spec over schema from a create block's
// partition fields. Transforms are identity, year, month, day, hour,
// bucket[N] and truncate[W]. A field without a name is named after its
// column for identity, column_bucket for bucket[N], column_trunc for
// truncate[W], and column_transform otherwise (Iceberg's convention).
func BuildSpec(schema *iceberg.Schema, fields []config.PartitionField) (iceberg.PartitionSpec, error) {
	if len(fields) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	opts := make([]iceberg.PartitionOption, 0, len(fields))
	decimalField := ""
	for i, f := range fields {
		src, ok := schema.FindFieldByName(f.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition field %d: no column %q", i, f.Column)
		}
		tname := strings.ToLower(strings.ReplaceAll(f.Transform, " ", ""))
		if tname == "" {
			tname = "identity"
		}
		tr, err := parseTransform(tname)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition field %d (%s): %w", i, f.Column, err)
		}
		if !tr.CanTransform(src.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition field %d: transform %s cannot apply to column %s of type %s",
				i, tr, f.Column, src.Type)
		}
		name := f.Name
		if name == "" {
			name = defaultPartitionName(f.Column, tr)
		}
		if _, ok := tr.ResultType(src.Type).(iceberg.DecimalType); ok {
			// iceberg-go v0.7.0 names every decimal partition field's Avro
			// type "fixed", so a manifest with two of them cannot be written
			// and every append would fail.
			if decimalField != "" {
				return iceberg.PartitionSpec{}, fmt.Errorf("partition fields %s and %s both hold decimals: the Iceberg library allows one decimal partition field per table (use bucket[N] for the other)",
					decimalField, name)
			}
			decimalField = name
		}
		id := 1000 + i
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(src.ID, name, tr, schema, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec: %w", err)
	}
	return spec, nil
}

// parseTransform accepts the transforms the ingestor supports and rejects
// the rest (iceberg-go would accept unknown names as UnknownTransform).
func parseTransform(s string) (iceberg.Transform, error) {
	const help = "want identity, year, month, day, hour, bucket[N] or truncate[W]"
	switch s {
	case "identity", "year", "month", "day", "hour":
	default:
		if !strings.HasPrefix(s, "bucket[") && !strings.HasPrefix(s, "truncate[") {
			return nil, fmt.Errorf("unknown transform %q: %s", s, help)
		}
	}
	tr, err := iceberg.ParseTransform(s)
	if err != nil {
		return nil, fmt.Errorf("transform %q: %s: %w", s, help, err)
	}
	switch tr.(type) {
	case iceberg.IdentityTransform, iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform,
		iceberg.HourTransform, iceberg.BucketTransform, iceberg.TruncateTransform:
		return tr, nil
	}
	return nil, fmt.Errorf("transform %q: %s", s, help)
}

func defaultPartitionName(col string, tr iceberg.Transform) string {
	switch tr.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.BucketTransform:
		return col + "_bucket"
	case iceberg.TruncateTransform:
		return col + "_trunc"
	}
	return col + "_" + tr.String()
}
