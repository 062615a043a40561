package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// fieldIDKey is the Arrow field metadata key under which pqarrow reports a
// Parquet field ID, which the consumer sets to the Iceberg field ID.
const fieldIDKey = "PARQUET:field_id"

// Segment is what the footer of one WAL segment says.
type Segment struct {
	// Path is the file inspected.
	Path string
	// Name is the parsed file name; nil when the name is not a WAL name
	// (an uploaded object <uuid>.parquet, a renamed copy).
	Name *walfile.Name
	// FileSize is the file's size in bytes.
	FileSize int64
	// Rows is the number of rows.
	Rows int64
	// RowGroups are the row groups in file order.
	RowGroups []RowGroup
	// Compression is the codec of the column chunks ("ZSTD"); "mixed"
	// when they differ.
	Compression string
	// CreatedBy is the writer library the footer names.
	CreatedBy string
	// Schema is the Arrow schema, with the Iceberg field IDs in each
	// field's metadata (key PARQUET:field_id).
	Schema *arrow.Schema
	// Partition is the raw walfile.MetaPartition value; HasPartition is
	// false when the footer has none.
	Partition    string
	HasPartition bool
	// Values are the partition values in field ID order (spec order once
	// decoded with DecodeWithSpec).
	Values []PartitionValue
}

// RowGroup is one row group of a segment.
type RowGroup struct {
	// Rows is the row group's row count.
	Rows int64 `json:"rows"`
	// CompressedBytes and UncompressedBytes add up the sizes of the row
	// group's column chunks, as stored and once decompressed.
	CompressedBytes   int64 `json:"compressedBytes"`
	UncompressedBytes int64 `json:"uncompressedBytes"`
}

// PartitionValue is one partition field's value in a segment's footer.
type PartitionValue struct {
	// FieldID is the partition field's ID in the table's spec.
	FieldID int `json:"fieldId"`
	// Name, Transform and Source (the source column) are known only when
	// the value was decoded with the table's spec.
	Name      string `json:"name,omitempty"`
	Transform string `json:"transform,omitempty"`
	Source    string `json:"source,omitempty"`
	// Raw is the value as the footer holds it (JSON).
	Raw json.RawMessage `json:"raw"`
	// Human is the value as Iceberg prints it in partition paths, when
	// decoded with the spec; otherwise the raw JSON.
	Human string `json:"value"`
}

// CompressedBytes returns the compressed size of all column chunks.
func (s *Segment) CompressedBytes() int64 {
	var n int64
	for _, rg := range s.RowGroups {
		n += rg.CompressedBytes
	}
	return n
}

// UncompressedBytes returns the uncompressed size of all column chunks.
func (s *Segment) UncompressedBytes() int64 {
	var n int64
	for _, rg := range s.RowGroups {
		n += rg.UncompressedBytes
	}
	return n
}

// ReadSegment reads the footer of the Parquet file at path. It reads no
// rows. The partition values are decoded generically (see
// DecodePartitionJSON); DecodeWithSpec decodes them as the committer does.
func ReadSegment(path string) (*Segment, error) {
	s := &Segment{Path: path}
	if n, err := walfile.Parse(filepath.Base(path)); err == nil {
		s.Name = &n
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat segment %s: %w", filepath.Base(path), err)
	}
	s.FileSize = info.Size()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		if s.Name != nil && s.Name.State == walfile.Active {
			return nil, fmt.Errorf("read parquet footer of %s: %w (an active segment has no footer until it rotates)", filepath.Base(path), err)
		}
		return nil, fmt.Errorf("read parquet footer of %s: %w", filepath.Base(path), err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	s.Rows = md.NumRows
	s.CreatedBy = md.GetCreatedBy()
	codecs := map[string]bool{}
	for i := 0; i < md.NumRowGroups(); i++ {
		rgm := md.RowGroup(i)
		rg := RowGroup{Rows: rgm.NumRows()}
		for c := 0; c < rgm.NumColumns(); c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return nil, fmt.Errorf("segment %s: row group %d column %d: %w", filepath.Base(path), i, c, err)
			}
			rg.CompressedBytes += cc.TotalCompressedSize()
			rg.UncompressedBytes += cc.TotalUncompressedSize()
			codecs[strings.ToUpper(cc.Compression().String())] = true
		}
		s.RowGroups = append(s.RowGroups, rg)
	}
	switch len(codecs) {
	case 0:
		s.Compression = "-"
	case 1:
		for c := range codecs {
			s.Compression = c
		}
	default:
		s.Compression = "mixed"
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("segment %s: arrow schema: %w", filepath.Base(path), err)
	}
	if s.Schema, err = fr.Schema(); err != nil {
		return nil, fmt.Errorf("segment %s: arrow schema: %w", filepath.Base(path), err)
	}
	if v := md.KeyValueMetadata().FindValue(walfile.MetaPartition); v != nil {
		s.Partition, s.HasPartition = *v, true
		if s.Values, err = DecodePartitionJSON(*v); err != nil {
			return nil, fmt.Errorf("segment %s: %w", filepath.Base(path), err)
		}
	}
	return s, nil
}

// DecodePartitionJSON decodes a walfile.MetaPartition value without the
// table: a JSON object from partition field ID to value, as
// tables.EncodePartition writes it. Values come back in field ID order,
// each as its JSON text.
func DecodePartitionJSON(raw string) ([]PartitionValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("decode partition %q: %w", raw, err)
	}
	out := make([]PartitionValue, 0, len(m))
	for k, v := range m {
		id, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("decode partition %q: key %q is not a partition field ID", raw, k)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("decode partition %q: %w", raw, err)
		}
		out = append(out, PartitionValue{FieldID: id, Raw: buf.Bytes(), Human: buf.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FieldID < out[j].FieldID })
	return out, nil
}

// DecodeWithSpec decodes the segment's partition values with a table's
// partition spec and schema, exactly as the committer does
// (tables.DecodePartition), and names each field. An error means the
// committer would reject the file for this table too.
func (s *Segment) DecodeWithSpec(spec iceberg.PartitionSpec, schema *iceberg.Schema) error {
	if !s.HasPartition {
		if spec.NumFields() == 0 {
			return nil
		}
		return fmt.Errorf("segment %s has no %s footer key, and the table has %d partition fields", filepath.Base(s.Path), walfile.MetaPartition, spec.NumFields())
	}
	typed, err := tables.DecodePartition(spec, schema, s.Partition)
	if err != nil {
		return err
	}
	raw := map[int]json.RawMessage{}
	for _, v := range s.Values {
		raw[v.FieldID] = v.Raw
	}
	out := make([]PartitionValue, 0, spec.NumFields())
	for _, f := range spec.Fields() {
		pv := PartitionValue{FieldID: f.FieldID, Name: f.Name, Transform: f.Transform.String(), Raw: raw[f.FieldID]}
		src, _ := schema.FindFieldByID(f.SourceID()) // DecodePartition checked it
		pv.Source = src.Name
		pv.Human = f.Transform.ToHumanStrType(src.Type, typed[f.FieldID])
		out = append(out, pv)
	}
	s.Values = out
	return nil
}

// segmentRecord is `wal inspect --output json`.
type segmentRecord struct {
	File              string           `json:"file"`
	State             string           `json:"state,omitempty"`
	Topic             string           `json:"topic,omitempty"`
	Partition         *int32           `json:"partition,omitempty"`
	Start             *int64           `json:"start,omitempty"`
	End               *int64           `json:"end,omitempty"`
	UUID              string           `json:"uuid,omitempty"`
	FileSize          int64            `json:"fileSize"`
	Rows              int64            `json:"rows"`
	CompressedBytes   int64            `json:"compressedBytes"`
	UncompressedBytes int64            `json:"uncompressedBytes"`
	Compression       string           `json:"compression"`
	CreatedBy         string           `json:"createdBy"`
	RowGroups         []RowGroup       `json:"rowGroups"`
	PartitionRaw      *string          `json:"partitionRaw"`
	PartitionValues   []PartitionValue `json:"partitionValues"`
	Schema            []schemaField    `json:"schema"`
}

// schemaField is one (possibly nested) field of the schema in JSON.
type schemaField struct {
	Name     string        `json:"name"`
	Type     string        `json:"type"`
	FieldID  *int          `json:"fieldId"`
	Required bool          `json:"required"`
	Fields   []schemaField `json:"fields,omitempty"`
}

// WriteSegment writes what ReadSegment found, as text for a person or as
// one JSON object.
func WriteSegment(w io.Writer, s *Segment, format string) error {
	switch format {
	case FormatJSON:
		return writeSegmentJSON(w, s)
	case FormatTable:
		return writeSegmentText(w, s)
	}
	return fmt.Errorf("unknown output format %q: want %s or %s", format, FormatTable, FormatJSON)
}

func writeSegmentJSON(w io.Writer, s *Segment) error {
	r := segmentRecord{
		File: s.Path, FileSize: s.FileSize, Rows: s.Rows,
		CompressedBytes: s.CompressedBytes(), UncompressedBytes: s.UncompressedBytes(),
		Compression: s.Compression, CreatedBy: s.CreatedBy,
		RowGroups: s.RowGroups, PartitionValues: s.Values,
	}
	if r.RowGroups == nil {
		r.RowGroups = []RowGroup{}
	}
	if r.PartitionValues == nil {
		r.PartitionValues = []PartitionValue{}
	}
	if n := s.Name; n != nil {
		r.State, r.Topic, r.Partition, r.UUID = n.State.String(), n.Topic, &n.Partition, n.UUID.String()
		if n.State != walfile.Active {
			r.Start, r.End = &n.Start, &n.End
		}
	}
	if s.HasPartition {
		r.PartitionRaw = &s.Partition
	}
	for _, f := range s.Schema.Fields() {
		r.Schema = append(r.Schema, jsonField(f))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func jsonField(f arrow.Field) schemaField {
	sf := schemaField{Name: f.Name, Type: typeLabel(f.Type), FieldID: fieldID(f), Required: !f.Nullable}
	for _, c := range children(f.Type) {
		sf.Fields = append(sf.Fields, jsonField(c))
	}
	return sf
}

func writeSegmentText(w io.Writer, s *Segment) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "file:\t%s\n", s.Path)
	if n := s.Name; n != nil {
		fmt.Fprintf(tw, "state:\t%s\n", n.State)
		fmt.Fprintf(tw, "topic:\t%s\n", n.Topic)
		fmt.Fprintf(tw, "kafka partition:\t%d\n", n.Partition)
		if n.State != walfile.Active {
			fmt.Fprintf(tw, "kafka offsets:\t%d-%d\n", n.Start, n.End)
		}
		fmt.Fprintf(tw, "uuid:\t%s\n", n.UUID)
	} else {
		fmt.Fprintf(tw, "state:\tunknown (not a WAL file name)\n")
	}
	fmt.Fprintf(tw, "rows:\t%d\n", s.Rows)
	fmt.Fprintf(tw, "file size:\t%d bytes (%s)\n", s.FileSize, FormatBytes(s.FileSize))
	fmt.Fprintf(tw, "compressed size:\t%d bytes (%s), %s\n", s.CompressedBytes(), FormatBytes(s.CompressedBytes()), s.Compression)
	fmt.Fprintf(tw, "uncompressed size:\t%d bytes (%s)\n", s.UncompressedBytes(), FormatBytes(s.UncompressedBytes()))
	fmt.Fprintf(tw, "created by:\t%s\n", s.CreatedBy)
	fmt.Fprintf(tw, "row groups:\t%d\n", len(s.RowGroups))
	if err := tw.Flush(); err != nil {
		return err
	}
	// Right-aligned, the padding of the first column indents the table.
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tROWS\tCOMPRESSED\tUNCOMPRESSED\t")
	for i, rg := range s.RowGroups {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t\n", i, rg.Rows, rg.CompressedBytes, rg.UncompressedBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !s.HasPartition {
		fmt.Fprintf(w, "partition values: none (no %s footer key)\n", walfile.MetaPartition)
	} else {
		fmt.Fprintf(w, "partition values (%s = %s):\n", walfile.MetaPartition, s.Partition)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, v := range s.Values {
			if v.Name == "" {
				fmt.Fprintf(tw, "  %d\t%s\n", v.FieldID, v.Human)
				continue
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s(%s)\t%s\n", v.FieldID, v.Name, v.Transform, v.Source, v.Human)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "schema (%d columns):\n", len(s.Schema.Fields()))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tTYPE")
	for _, f := range s.Schema.Fields() {
		writeField(tw, f, 1)
	}
	return tw.Flush()
}

// writeField writes f and its nested fields, indented by depth.
func writeField(w io.Writer, f arrow.Field, depth int) {
	id := "-"
	if p := fieldID(f); p != nil {
		id = strconv.Itoa(*p)
	}
	req := "optional"
	if !f.Nullable {
		req = "required"
	}
	fmt.Fprintf(w, "  %s\t%s%s\t%s %s\n", id, strings.Repeat("  ", depth-1), f.Name, typeLabel(f.Type), req)
	for _, c := range children(f.Type) {
		writeField(w, c, depth+1)
	}
}

// fieldID returns the Iceberg field ID of f, or nil when it has none.
func fieldID(f arrow.Field) *int {
	v, ok := f.Metadata.GetValue(fieldIDKey)
	if !ok {
		return nil
	}
	id, err := strconv.Atoi(v)
	if err != nil {
		return nil
	}
	return &id
}

// children returns the nested fields of a struct, list or map type.
func children(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.StructType:
		return t.Fields()
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case arrow.ListLikeType:
		return []arrow.Field{t.ElemField()}
	}
	return nil
}

// typeLabel names a type: nested types by their kind alone, since their
// fields are listed below them.
func typeLabel(t arrow.DataType) string {
	switch t.(type) {
	case *arrow.StructType:
		return "struct"
	case *arrow.MapType:
		return "map"
	case arrow.ListLikeType:
		return "list"
	}
	return t.String()
}
