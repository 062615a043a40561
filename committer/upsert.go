package committer

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// An upsert dataset's batch goes into the table in one snapshot that
// adds its segments' data files and the delete files that make the table
// show, for each key, the last row by Kafka offset and no row for a key
// whose last record is a delete:
//
//   - equality-delete files on the key columns, holding every key the
//     batch carries: they remove the rows of those keys that older
//     snapshots added (an equality delete applies only to data files of a
//     lower sequence number, never to the rows added beside it);
//   - position-delete files, one per partition, for the batch's own rows
//     that a later row of the same key supersedes, and for its delete
//     rows (a position delete applies to the data files of its own
//     snapshot too).
//
// The later row of a key is the one of the higher Kafka offset: segments
// are ordered by Kafka partition and first offset, rows within a segment
// are in offset order, and all versions of a key are in one Kafka
// partition (docs/records.md). The table's partition is a function of the
// key (tables.UpsertKeys), so the equality delete written in a key's
// partition reaches every older row of the key.
//
// Crash ordering: the delete files are written before the commit, which
// names them with the data files and the ledger in one snapshot. Dying
// before the commit (failpoint committer.after-delete-files) leaves
// objects no metadata names, deleted by the orphan cleanup; the next pass
// writes the batch's delete files again. Dying after it leaves the
// segments in the table's ledger, which the next pass finds (dropInTable)
// and deletes locally: nothing is added twice.

// upsertDeletes writes the delete files of one upsert batch. files[i] is
// the data file of batch[i].
func (c *Committer) upsertDeletes(ctx context.Context, d config.Dataset, tbl *table.Table, files []iceberg.DataFile, batch []*segment) ([]iceberg.DataFile, error) {
	keyIDs, err := tables.UpsertKeys(d, tbl.Schema(), tbl.Spec())
	if err != nil {
		return nil, err
	}
	keys, err := readKeys(ctx, tbl.Schema(), keyIDs, batch)
	if err != nil {
		return nil, err
	}
	defer keys.release()
	out, err := writeDeletes(ctx, tbl, keyIDs, files, keys)
	if err != nil {
		return nil, err
	}
	// Dying here leaves delete files no snapshot refers to: orphans,
	// which the orphan cleanup deletes; the next pass writes the batch's
	// delete files again.
	failpoint.Hit(failpoint.CommitterAfterDeleteFiles)
	return out, nil
}

// batchKeys are the key columns of one upsert batch's segments, in Kafka
// order, and which rows of each segment are deletes.
type batchKeys struct {
	schema  *arrow.Schema // the key columns as the equality-delete writer takes them
	order   []int         // segment indexes in Kafka order
	recs    [][]arrow.RecordBatch
	deletes [][]int64 // sorted delete-row positions, by segment index
}

func (k *batchKeys) release() {
	for _, rs := range k.recs {
		for _, r := range rs {
			r.Release()
		}
	}
}

// superseded returns, by segment index, the sorted positions of the rows
// the table must not show: each key's rows but its last, and its last
// when it is a delete.
func (k *batchKeys) superseded() [][]int64 {
	type loc struct {
		seg int
		pos int64
	}
	out := make([][]int64, len(k.recs))
	last := map[string]loc{}
	var buf []byte
	for _, i := range k.order {
		pos := int64(0)
		for _, r := range k.recs[i] {
			for row := 0; row < int(r.NumRows()); row++ {
				buf = appendKey(buf[:0], r, row)
				if prev, ok := last[string(buf)]; ok {
					out[prev.seg] = append(out[prev.seg], prev.pos)
				}
				last[string(buf)] = loc{i, pos}
				pos++
			}
		}
	}
	for _, l := range last {
		if _, del := slices.BinarySearch(k.deletes[l.seg], l.pos); del {
			out[l.seg] = append(out[l.seg], l.pos)
		}
	}
	for i := range out {
		slices.Sort(out[i])
	}
	return out
}

// appendKey appends an exact, self-delimiting encoding of a row's key
// values.
func appendKey(dst []byte, r arrow.RecordBatch, row int) []byte {
	for _, col := range r.Columns() {
		switch a := col.(type) {
		case *array.String:
			v := a.Value(row)
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		case *array.Binary:
			v := a.Value(row)
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		case *array.Int32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Value(row)))
		case *array.Int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(row)))
		default:
			v := a.ValueStr(row)
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		}
	}
	return dst
}

// readKeys reads the key columns and the delete rows of the batch's local
// ready files.
func readKeys(ctx context.Context, schema *iceberg.Schema, keyIDs []int, batch []*segment) (*batchKeys, error) {
	fields := make([]iceberg.NestedField, len(keyIDs))
	for i, id := range keyIDs {
		f, _ := schema.FindFieldByID(id)
		fields[i] = f
	}
	as, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, true, false)
	if err != nil {
		return nil, err
	}
	k := &batchKeys{schema: as, recs: make([][]arrow.RecordBatch, len(batch)), deletes: make([][]int64, len(batch))}
	k.order = make([]int, len(batch))
	for i := range k.order {
		k.order[i] = i
	}
	slices.SortFunc(k.order, func(a, b int) int {
		return cmp.Or(cmp.Compare(batch[a].ready.Partition, batch[b].ready.Partition), cmp.Compare(batch[a].ready.Start, batch[b].ready.Start))
	})
	for i, s := range batch {
		if err := k.readSegment(ctx, i, s.ready.Path, keyIDs); err != nil {
			k.release()
			return nil, err
		}
	}
	return k, nil
}

func (k *batchKeys) readSegment(ctx context.Context, i int, path string, keyIDs []int) error {
	name := filepath.Base(path)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer pf.Close()
	if v := pf.MetaData().KeyValueMetadata().FindValue(walfile.MetaDeletes); v != nil {
		if k.deletes[i], err = walfile.DecodeRows(*v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	cols := make([]int, len(keyIDs))
	sch := pf.MetaData().Schema
	for j, id := range keyIDs {
		cols[j] = -1
		for c := 0; c < sch.NumColumns(); c++ {
			if sch.Column(c).SchemaNode().FieldID() == int32(id) {
				cols[j] = c
			}
		}
		if cols[j] < 0 {
			return fmt.Errorf("%s: no column of field id %d, a key column", name, id)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rr, err := fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return fmt.Errorf("%s: read key columns: %w", name, err)
	}
	defer rr.Release()
	for rr.Next() {
		r := rr.RecordBatch()
		if !r.Schema().Equal(k.schema) {
			// The same columns under the field ids and types the
			// equality-delete writer expects.
			for j, f := range k.schema.Fields() {
				if !arrow.TypeEqual(f.Type, r.Column(j).DataType()) {
					return fmt.Errorf("%s: key column %s is %s in the file, %s in the table", name, f.Name, r.Column(j).DataType(), f.Type)
				}
			}
			r = array.NewRecordBatch(k.schema, r.Columns(), r.NumRows())
		} else {
			r.Retain()
		}
		k.recs[i] = append(k.recs[i], r)
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("%s: read key columns: %w", name, err)
	}
	return nil
}

func samePartition(a, b map[int]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || fmt.Sprint(v) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}

type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// inOffsetOrder keeps, of an upsert batch, the segments that no segment
// of the same Kafka partition left out of it precedes: one not uploaded
// yet, handed back, or not describable this pass. A later segment
// appended before an earlier one would let the earlier one's rows, older
// versions of their keys, replace the later ones'. The held segments wait
// for the next pass. files[i] is the data file of batch[i]; rows is the
// kept files' row count.
//
// Across WAL directories, a segment that names another directory's last
// row of its partition (walfile.MetaUpsertAfter, consumer/upsertorder.go)
// waits until the table, or an earlier segment of the batch, holds that
// offset: the other directory's older rows first. It waits at most
// upsertOrderWait, in case the other directory's segments never come (a
// lost volume); after that it is appended, and the late segment, should
// it come, is counted out of order.
func (c *Committer) inOffsetOrder(log *slog.Logger, d config.Dataset, tbl *table.Table, files []iceberg.DataFile, batch []*segment) ([]iceberg.DataFile, []*segment, int64) {
	in := map[uuid.UUID]bool{}
	for _, s := range batch {
		in[s.ready.UUID] = true
	}
	first := map[int32]int64{} // by Kafka partition, the first offset of a ready file left out
	all, err := walfile.List(c.dir)
	if err != nil {
		log.Warn("list the WAL directory to keep upserts in offset order; the batch waits", "err", err)
		return nil, nil, 0
	}
	for _, f := range all {
		if f.Topic != d.Topic || f.State != walfile.Ready || in[f.UUID] {
			continue
		}
		if v, ok := first[f.Partition]; !ok || f.Start < v {
			first[f.Partition] = f.Start
		}
	}
	covered := map[int32]int64{} // by partition, the last offset the table or the batch holds
	// A malformed record covers nothing here; orderProperty refuses the
	// append with its error.
	last, _ := upsertOffsets(tbl)
	for p, l := range last {
		if n, err := strconv.Atoi(p); err == nil {
			covered[int32(n)] = l.Offset
		}
	}
	var keptFiles []iceberg.DataFile
	var kept []*segment
	var rows int64
	held, waiting := 0, 0
	blocked := map[int32]bool{}
	now := time.Now()
	for i, s := range batch { // batch is in Kafka order (collect)
		p := s.ready.Partition
		if v, ok := first[p]; (ok && s.ready.Start > v) || blocked[p] {
			held++
			continue
		}
		if have, ok := covered[p]; s.hasAfter && (!ok || have < s.after) {
			since, seen := c.upsertWaiting[s.ready.UUID]
			if !seen {
				since = now
				c.upsertWaiting[s.ready.UUID] = now
			}
			if now.Sub(since) < upsertOrderWait {
				waiting++
				blocked[p] = true
				continue
			}
			log.Error("upsert segment appended without the other WAL directory's earlier rows of its partition, after waiting for them",
				"file", s.ready.Name.String(), "partition", p, "waits_for_offset", s.after, "table_holds", have, "waited", upsertOrderWait)
		}
		delete(c.upsertWaiting, s.ready.UUID)
		covered[p] = max(covered[p], s.ready.End)
		kept = append(kept, s)
		keptFiles = append(keptFiles, files[i])
		rows += files[i].Count()
	}
	c.metrics.upsertWaiting.WithLabelValues(d.Name).Set(float64(waiting))
	if held > 0 {
		log.Info("upsert segments wait for an earlier segment of their Kafka partition", "held", held)
	}
	if waiting > 0 {
		log.Info("upsert segments wait for another WAL directory's earlier rows of their partition to be in the table", "waiting", waiting)
	}
	return keptFiles, kept, rows
}

// upsertOrderWait bounds how long an upsert segment waits for another WAL
// directory's earlier rows of its partition (inOffsetOrder).
var upsertOrderWait = 15 * time.Minute

// UpsertOffsets is the table property in which an upsert dataset's
// appends record, per Kafka partition, the last offset of a segment in
// the table and the WAL directory that appended it: JSON
// {"<partition>": {"o": offset, "w": "<wal id>"}}. It is set in the
// append's own transaction, so it is exact.
const UpsertOffsets = "ingestor.upsert.offsets"

// lastAppended is one partition's entry of UpsertOffsets.
type lastAppended struct {
	Offset int64  `json:"o"`
	WAL    string `json:"w"`
}

// upsertOffsets reads tbl's UpsertOffsets record, by Kafka partition.
func upsertOffsets(tbl *table.Table) (map[string]lastAppended, error) {
	last := map[string]lastAppended{}
	if v, ok := tbl.Properties()[UpsertOffsets]; ok {
		if err := json.Unmarshal([]byte(v), &last); err != nil {
			return map[string]lastAppended{}, fmt.Errorf("table property %s: %w", UpsertOffsets, err)
		}
	}
	return last, nil
}

// orderProperty checks an upsert batch against what the table holds and
// returns the property that records the batch. inOffsetOrder keeps each
// key's segments in order, within one WAL directory (segments of one
// Kafka partition for different table partitions interleave in offsets,
// but hold different keys) and across directories, where the new owner
// of a partition waits for the old owner's rows. A segment of another
// directory whose offsets are not past the table's record comes only
// after that wait gave up: its keys that the new owner also updated now
// show this segment's older version. That cannot be undone here without
// the rows' offsets, so it is appended (no row is lost), logged and
// counted (ingestor_committer_upsert_out_of_order_total, alert
// IngestorUpsertOutOfOrder).
func (c *Committer) orderProperty(log *slog.Logger, d config.Dataset, tbl *table.Table, batch []*segment) (iceberg.Properties, error) {
	walID, err := walfile.WALID(c.dir)
	if err != nil {
		return nil, err
	}
	last, err := upsertOffsets(tbl)
	if err != nil {
		return nil, err
	}
	for _, s := range batch {
		p := strconv.Itoa(int(s.ready.Partition))
		l, ok := last[p]
		if ok && l.WAL != walID && s.ready.Start <= l.Offset {
			c.metrics.outOfOrder.WithLabelValues(d.Name).Inc()
			log.Error("upsert segment appended after another WAL directory appended a later offset of its Kafka partition: keys updated on both sides may show this older version",
				"file", s.ready.Name.String(), "partition", s.ready.Partition, "start", s.ready.Start, "table_holds_offset", l.Offset)
		}
		if !ok || s.ready.End > l.Offset || l.WAL != walID {
			last[p] = lastAppended{Offset: max(l.Offset, s.ready.End), WAL: walID}
		}
	}
	b, err := json.Marshal(last)
	if err != nil {
		return nil, err
	}
	return iceberg.Properties{UpsertOffsets: string(b)}, nil
}
