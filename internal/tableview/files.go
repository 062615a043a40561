package tableview

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
)

// File is one data file of the current snapshot.
type File struct {
	Path string `json:"path"`
	// Partition maps each partition field's name to its value as Iceberg
	// writes it in paths (tenant=acme, ts_day=2024-03-01).
	Partition map[string]string `json:"partition"`
	SpecID    int32             `json:"spec_id"`
	Rows      int64             `json:"rows"`
	Bytes     int64             `json:"bytes"`
}

// PartitionText is the partition as name=value pairs, those named in
// order first (the current spec's fields), then any other (a field of
// the older spec the file was written with) by name.
func (f File) PartitionText(order []string) string {
	parts := make([]string, 0, len(f.Partition))
	for _, n := range order {
		if val, ok := f.Partition[n]; ok {
			parts = append(parts, n+"="+val)
		}
	}
	for _, n := range sortedKeys(f.Partition) {
		if !slices.Contains(order, n) {
			parts = append(parts, n+"="+f.Partition[n])
		}
	}
	if len(parts) == 0 {
		return "(unpartitioned)"
	}
	return strings.Join(parts, "/")
}

// ParsePartition parses the --partition filter: name=value pairs
// separated by commas or slashes (tenant=acme,ts_day=2024-03-01).
func ParsePartition(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '/' }) {
		name, val, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("partition filter %q: want name=value pairs separated by commas, as in tenant=acme,ts_day=2024-03-01", s)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(val)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("partition filter %q is empty", s)
	}
	return out, nil
}

// Files lists the data files of the current snapshot, in path order,
// keeping those whose partition has every name=value of filter. A filter
// naming a field no spec of the table has is an error, so that a typo
// does not read as "no files".
func (v *View) Files(ctx context.Context, filter map[string]string) ([]File, error) {
	if err := v.checkFilter(filter); err != nil {
		return nil, err
	}
	if v.tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	scan := v.tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, v.err(fmt.Errorf("list the files of table %s: %w", v.Dataset.Table, err))
	}
	md := v.tbl.Metadata()
	sc := v.tbl.Schema()
	out := make([]File, 0, len(tasks))
	for _, t := range tasks {
		df := t.File
		f := File{Path: v.Redact(df.FilePath()), SpecID: df.SpecID(), Rows: df.Count(), Bytes: df.FileSizeBytes(), Partition: map[string]string{}}
		if spec := md.PartitionSpecByID(int(df.SpecID())); spec != nil {
			values := df.Partition()
			for _, pf := range spec.Fields() {
				f.Partition[pf.Name] = humanValue(sc, pf, values[pf.FieldID])
			}
		}
		if matches(f.Partition, filter) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// PartitionNames are the current spec's field names, in order.
func (v *View) PartitionNames() []string {
	var names []string
	spec := v.tbl.Spec()
	for _, f := range spec.Fields() {
		names = append(names, f.Name)
	}
	return names
}

func (v *View) checkFilter(filter map[string]string) error {
	known := map[string]bool{}
	for _, spec := range v.tbl.Metadata().PartitionSpecs() {
		for _, f := range spec.Fields() {
			known[f.Name] = true
		}
	}
	for name := range filter {
		if !known[name] {
			return fmt.Errorf("table %s has no partition field %q (its fields: %s)", v.Dataset.Table, name, strings.Join(v.PartitionNames(), ", "))
		}
	}
	return nil
}

func matches(p, filter map[string]string) bool {
	for k, want := range filter {
		if got, ok := p[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// humanValue writes a partition value the way Iceberg writes it in a
// data file's path: days as dates, hours as date-hour, identity values as
// they are.
func humanValue(sc *iceberg.Schema, pf iceberg.PartitionField, val any) string {
	var typ iceberg.Type
	if src, ok := sc.FindFieldByID(sourceIDs(pf.SourceIDs)); ok {
		typ = src.Type
	}
	if typ == nil {
		return fmt.Sprint(val)
	}
	return pf.Transform.ToHumanStrType(typ, val)
}
