package consumer

import (
	"context"
	"encoding/json"

	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// tableRefreshEvery is how often a dataset's table is reloaded to see a
// change another engine made (a column added, a partition spec changed);
// each rotation reloads it too.
const tableRefreshEvery = 10 * time.Second

// tableLoadTimeout bounds one background reload.
const tableLoadTimeout = 30 * time.Second

// tableView is one state of a dataset's table (its UUID, schema and
// partition spec) and what the writer derives from it to write segments
// for it. The writer holds one, and takes a newer one only at a rotation
// (writer.rotateLocked), when no segment is open: every segment is written
// with one schema and partitioned by one spec from its first row to its
// footer.
type tableView struct {
	id       walfile.TableIdentity
	identity string // id as recorded under walfile.MetaTable
	schema   *iceberg.Schema
	dec      *recordDecoder
	part     *partitioner
	arrow    *arrow.Schema
	up       *upserter // nil unless the dataset upserts
}

// newTableView derives the writer's decoder, partitioner and Arrow schema
// from tbl. It fails when the dataset's customMapping does not fit the
// schema (it names a column that is not there, a required column has no
// mapping).
func newTableView(ds config.Dataset, f *valueFormat, tbl *table.Table) (*tableView, error) {
	schema := tbl.Schema()
	spec := tbl.Spec()
	dec, err := newRecordDecoder(f, schema)
	if err != nil {
		return nil, err
	}
	part, err := newPartitioner(schema, &spec)
	if err != nil {
		return nil, err
	}
	as, err := ArrowSchema(schema)
	if err != nil {
		return nil, err
	}
	up, err := newUpserter(ds, f, schema, spec)
	if err != nil {
		return nil, err
	}
	id := walfile.TableIdentity{UUID: tbl.Metadata().TableUUID().String(), SchemaID: schema.ID, SpecID: spec.ID()}
	b, _ := json.Marshal(id)
	return &tableView{id: id, identity: string(b), schema: schema, dec: dec, part: part, arrow: as, up: up}, nil
}

// sameFieldIDs reports whether every column of from is a column of the
// same name and field id in to: segments written with from then mean the
// same in a table with schema to (the committer's identity check), and
// the consumer may write for it.
func sameFieldIDs(from, to *iceberg.Schema) (bool, string) {
	for _, f := range from.Fields() {
		g, ok := to.FindFieldByID(f.ID)
		if !ok || g.Name != f.Name {
			return false, f.Name
		}
	}
	return true, ""
}

// tableWatch reloads a dataset's table in the background, every
// tableRefreshEvery and after each rotation, and hands a changed one to
// the writer, which takes it at its next rotation. A reload never runs on
// the record path: the catalog may be slow or down, and the writer goes
// on with what it has.
type tableWatch struct {
	l   *loop
	cat catalog.Catalog
	log *slog.Logger
	// seen is the last table state looked at: proposed to the writer, or
	// refused (logged once).
	seen walfile.TableIdentity
	// schema is the schema of the view the writer has or was last given.
	schema  *iceberg.Schema
	lastErr string
	every   time.Duration
}

func (l *loop) newTableWatch(cat catalog.Catalog, v *tableView, log *slog.Logger) *tableWatch {
	return &tableWatch{l: l, cat: cat, log: log, seen: v.id, schema: v.schema, every: l.c.tableEvery}
}

// run reloads until ctx ends.
func (tw *tableWatch) run(ctx context.Context) {
	t := time.NewTicker(tw.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-tw.l.w.rotated:
		}
		tw.refresh(ctx)
	}
}

// refresh reloads the table once and proposes it to the writer if its
// UUID, schema or spec changed and the consumer can write for it.
func (tw *tableWatch) refresh(ctx context.Context) {
	ds := tw.l.ds
	lctx, cancel := context.WithTimeout(ctx, tableLoadTimeout)
	tbl, err := tw.cat.LoadTable(lctx, table.Identifier(ds.TableIdent()))
	cancel()
	if err != nil {
		if ctx.Err() == nil && err.Error() != tw.lastErr {
			tw.log.Warn("reload table to look for schema changes; the writer goes on with the schema it has", "table", ds.Table, "err", err)
		}
		tw.lastErr = err.Error()
		return
	}
	tw.lastErr = ""
	spec := tbl.Spec()
	now := walfile.TableIdentity{UUID: tbl.Metadata().TableUUID().String(), SchemaID: tbl.Schema().ID, SpecID: spec.ID()}
	if now == tw.seen {
		return
	}
	prev := tw.seen
	tw.seen = now
	if now.UUID != prev.UUID {
		tw.log.Warn("table recreated: its UUID changed", "table", ds.Table, "old_table_uuid", prev.UUID, "table_uuid", now.UUID)
		if ok, col := sameFieldIDs(tw.schema, tbl.Schema()); !ok {
			tw.log.Error("the recreated table's columns carry other field ids: the consumer goes on writing for the table it had, "+
				"and the committer stops the dataset's appends until an operator acts (docs/operations.md, \"Table identity\")",
				"table", ds.Table, "column", col, "table_uuid", now.UUID)
			return
		}
	}
	v, err := newTableView(ds, tw.l.format, tbl)
	if err != nil {
		tw.log.Error("table schema changed, but the consumer cannot write for it: it goes on with the schema it has, whose files stay valid; fix customMapping and restart",
			"table", ds.Table, "schema_id", now.SchemaID, "spec_id", now.SpecID, "err", err)
		return
	}
	tw.schema = v.schema
	tw.log.Info("table schema changed; new segments use it from the next rotation", "table", ds.Table,
		"old_schema_id", prev.SchemaID, "schema_id", now.SchemaID, "old_spec_id", prev.SpecID, "spec_id", now.SpecID)
	tw.l.w.propose(v)
}

// propose hands the writer a newer table view, taken at its next rotation.
func (w *writer) propose(v *tableView) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next = v
}

// useLocked makes v the view new segments are written for. No segment may
// be open: an open segment holds rows of the old schema.
func (w *writer) useLocked(v *tableView) {
	if w.view != nil {
		v.dec.Limit(w.dec.Limits())
		w.log.Info("table schema changed; new segments use it",
			"old_schema_id", w.view.id.SchemaID, "schema_id", v.id.SchemaID, "old_spec_id", w.view.id.SpecID, "spec_id", v.id.SpecID,
			"table_uuid", v.id.UUID)
	}
	w.view = v
	w.dec, w.part, w.schema, w.identity, w.up = v.dec, v.part, v.arrow, v.identity, v.up
	w.minFlush = max(minFlushBytes, minFlushPerColumn*int64(len(v.schema.Fields())))
}

// takeNextLocked switches to a proposed view when no segment is open.
func (w *writer) takeNextLocked() {
	if w.next == nil {
		return
	}
	for _, st := range w.parts {
		if len(st.segs) > 0 {
			return
		}
	}
	w.useLocked(w.next)
	w.next = nil
}

// kickRefresh asks the table watch to reload the table, without waiting.
func (w *writer) kickRefresh() {
	select {
	case w.rotated <- struct{}{}:
	default:
	}
}

// partitionsWithSegmentsLocked lists the partitions holding open segments
// besides those in ps: a rotation that takes a new view rotates them all.
func (w *writer) partitionsWithSegmentsLocked(ps []int32) (extra []int32) {
	in := map[int32]bool{}
	for _, p := range ps {
		in[p] = true
	}
	for p, st := range w.parts {
		if !in[p] && len(st.segs) > 0 {
			extra = append(extra, p)
		}
	}
	return extra
}
