package tableview

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icewal/ingestor/internal/inspect"
)

// CheckFormat accepts FormatText and FormatJSON.
func CheckFormat(format string) error {
	if format != FormatText && format != FormatJSON {
		return fmt.Errorf("unknown output format %q: want %s or %s", format, FormatText, FormatJSON)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// maxDebtPartitions bounds the partitions with delete files the text
// description lists.
const maxDebtPartitions = 10

// WriteDescription writes d as text or JSON.
func WriteDescription(w io.Writer, d *Description, format string) error {
	if format == FormatJSON {
		return writeJSON(w, d)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", d.Dataset)
	fmt.Fprintf(tw, "table\t%s\n", d.Table)
	fmt.Fprintf(tw, "location\t%s\n", d.Location)
	fmt.Fprintf(tw, "format version\t%d\n", d.FormatVersion)
	fmt.Fprintf(tw, "snapshots\t%d\n", d.Snapshots)
	fmt.Fprintf(tw, "data files\t%d\n", d.DataFiles)
	fmt.Fprintf(tw, "bytes\t%s (%d)\n", inspect.FormatBytes(d.Bytes), d.Bytes)
	fmt.Fprintf(tw, "rows\t%d\n", d.Rows)
	if x := d.Deletes; x != nil {
		fmt.Fprintf(tw, "delete files\t%d (%d position, %d equality, %d deletion vectors), at most %d in a partition\n",
			x.Files(), x.PositionFiles, x.EqualityFiles, x.DeletionVectors, x.MaxPartitionFiles)
		fmt.Fprintf(tw, "deleted records\t%d\n", x.DeletedRecords)
	}
	if c := d.LastCommit; c != nil {
		fmt.Fprintf(tw, "last commit\t%d at %s, %s by %s\n", c.ID, c.Time.Format(time.RFC3339), c.Operation, c.By)
	} else {
		fmt.Fprintf(tw, "last commit\tnone: the table holds no snapshot yet\n")
	}
	tw.Flush()

	fmt.Fprintf(w, "\nschema (id %d)\n", d.SchemaID)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tTYPE\tREQUIRED")
	for _, c := range d.Schema {
		req := "optional"
		if c.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", c.ID, c.Name, c.Type, req)
	}
	tw.Flush()

	fmt.Fprintf(w, "\npartition spec (id %d)\n", d.SpecID)
	if len(d.Partition) == 0 {
		fmt.Fprintln(w, "  unpartitioned")
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FIELD ID\tNAME\tSOURCE\tTRANSFORM")
		for _, p := range d.Partition {
			fmt.Fprintf(tw, "  %d\t%s\t%s (id %d)\t%s\n", p.FieldID, p.Name, p.Source, p.SourceID, p.Transform)
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\nsort order (id %d)\n", d.SortOrderID)
	if len(d.SortOrder) == 0 {
		fmt.Fprintln(w, "  unsorted")
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  SOURCE\tTRANSFORM\tDIRECTION\tNULLS")
		for _, s := range d.SortOrder {
			fmt.Fprintf(tw, "  %s (id %d)\t%s\t%s\t%s\n", s.Source, s.SourceID, s.Transform, s.Direction, s.NullOrder)
		}
		tw.Flush()
	}

	if x := d.Deletes; x != nil && len(x.Partitions) > 0 {
		// The partitions with the most delete files: those compaction
		// rewrites whole first. The JSON output lists them all.
		fmt.Fprintln(w, "\npartitions with delete files (spec id/partition values by field id)")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PARTITION\tDELETE FILES\tDELETED RECORDS\tDATA FILES\tROWS")
		for i, p := range x.Partitions {
			if i == maxDebtPartitions {
				fmt.Fprintf(tw, "  (%d more)\n", len(x.Partitions)-i)
				break
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\n", p.Partition, p.DeleteFiles, p.DeletedRecords, p.DataFiles, p.Rows)
		}
		tw.Flush()
	}

	fmt.Fprintln(w, "\nproperties")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range sortedKeys(d.Properties) {
		fmt.Fprintf(tw, "  %s\t%s\n", k, d.Properties[k])
	}
	return tw.Flush()
}

// WriteSnapshots writes the snapshots as text (one line each) or JSON.
func WriteSnapshots(w io.Writer, snaps []Snapshot, format string) error {
	if format == FormatJSON {
		return writeJSON(w, snaps)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SNAPSHOT\tTIME\tOPERATION\tADDED FILES\tADDED ROWS\tTOTAL ROWS\tDATASET\tSEGMENTS\tBY")
	for _, s := range snaps {
		id := strconv.FormatInt(s.ID, 10)
		if s.Current {
			id += " *"
		}
		dataset := s.Dataset
		if dataset == "" {
			dataset = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", id, s.Time.Format(time.RFC3339), s.Operation,
			count(s.AddedFiles), count(s.AddedRows), count(s.TotalRows), dataset, len(s.Segments), s.By)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d snapshots; * marks the current one; SEGMENTS counts the WAL segments the ingestor's append added (--output json lists them)\n", len(snaps))
	return err
}

func count(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// WriteFiles writes the files as text, partitions in the order of names,
// or JSON.
func WriteFiles(w io.Writer, files []File, names []string, format string) error {
	if format == FormatJSON {
		if files == nil {
			files = []File{}
		}
		return writeJSON(w, files)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tPARTITION\tROWS\tBYTES")
	var rows, size int64
	for _, f := range files {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", f.Path, f.PartitionText(names), f.Rows, inspect.FormatBytes(f.Bytes))
		rows += f.Rows
		size += f.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d files, %d rows, %s\n", len(files), rows, inspect.FormatBytes(size))
	return err
}

// WriteRows writes rows as a text table (nested values as JSON) or JSON:
// an array of objects, one per row, keyed by column.
func WriteRows(w io.Writer, r *Rows, format string) error {
	if format == FormatJSON {
		objs := make([]map[string]any, 0, len(r.Rows))
		for _, row := range r.Rows {
			o := make(map[string]any, len(row))
			for i, v := range row {
				o[r.Columns[i]] = v
			}
			objs = append(objs, o)
		}
		return writeJSON(w, objs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(r.Columns, "\t"))
	for _, row := range r.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cell(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d rows\n", len(r.Rows))
	return err
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(x)
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
