package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/internal/devenv"
)

// eventTime spreads events over three days so that the day partitions of
// the table get several values.
var baseTime = time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)

func eventTime(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 13 * time.Second) }

// checkTable scans the table (of clicksDataset) back with iceberg-go and
// checks every good event is there exactly once, with the values it was
// produced with, in a data file whose partition matches its rows.
func (w *world) checkTable(t *testing.T, name string, good []int64) {
	t.Helper()
	ctx := context.Background()
	tbl, closeCat, err := w.openTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan table: %v", err)
	}
	defer at.Release()
	want := map[string]devenv.Event{}
	for _, seq := range good {
		ev := devenv.NewEvent(seq, eventTime(seq))
		want[ev.ID] = ev
	}
	seen := map[string]int{}
	col := func(name string) *arrow.Chunked {
		idx := at.Schema().FieldIndices(name)
		if len(idx) == 0 {
			t.Fatalf("table has no column %s", name)
		}
		return at.Column(idx[0]).Data()
	}
	ids, tenants, tss, countries := col("event_id"), col("tenant"), col("ts"), col("country")
	users := col("user")
	var mismatches int
	for ci, chunk := range ids.Chunks() {
		idArr := chunk.(*array.String)
		tenArr := tenants.Chunk(ci).(*array.String)
		tsArr := tss.Chunk(ci).(*array.Timestamp)
		coArr := countries.Chunk(ci).(*array.String)
		usArr := users.Chunk(ci).(*array.Struct)
		for i := 0; i < idArr.Len(); i++ {
			id := idArr.Value(i)
			seen[id]++
			ev, ok := want[id]
			if !ok {
				t.Errorf("table holds unexpected event %q", id)
				continue
			}
			gotTS := time.UnixMicro(int64(tsArr.Value(i))).UTC()
			wantTS, _ := time.Parse(time.RFC3339Nano, ev.Meta.TS)
			userID := usArr.Field(0).(*array.Int64).Value(i)
			if tenArr.Value(i) != ev.Meta.Tenant || coArr.Value(i) != ev.Geo.Country || !gotTS.Equal(wantTS) || userID != ev.User.ID {
				if mismatches++; mismatches < 5 {
					t.Errorf("event %s: got tenant=%s country=%s ts=%s user.id=%d, want %s %s %s %d", id,
						tenArr.Value(i), coArr.Value(i), gotTS, userID, ev.Meta.Tenant, ev.Geo.Country, wantTS, ev.User.ID)
				}
			}
		}
	}
	var missing, dup int
	for id := range want {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || dup > 0 {
		t.Fatalf("of %d events: %d missing, %d duplicated (table rows %d)", len(want), missing, dup, at.NumRows())
	}

	// Every data file belongs to one tenant and one day, and its column
	// bounds agree with its partition values.
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema := tbl.Schema()
	tenantID := mustField(t, schema, "tenant")
	tsID := mustField(t, schema, "ts")
	days := map[int32]bool{}
	for _, task := range tasks {
		df := task.File
		part := df.Partition()
		var ptenant string
		var pday int32
		spec := tbl.Spec()
		for _, f := range spec.Fields() {
			switch f.Name {
			case "tenant":
				ptenant, _ = part[f.FieldID].(string)
			case "ts_day":
				switch v := part[f.FieldID].(type) {
				case int32:
					pday = v
				case iceberg.Date:
					pday = int32(v)
				}
			}
		}
		days[pday] = true
		lo, hi := df.LowerBoundValues()[tenantID], df.UpperBoundValues()[tenantID]
		if string(lo) != ptenant || string(hi) != ptenant {
			t.Errorf("file %s: partition tenant %q but rows from %q to %q", df.FilePath(), ptenant, lo, hi)
		}
		tlo, thi := df.LowerBoundValues()[tsID], df.UpperBoundValues()[tsID]
		if len(tlo) == 8 && len(thi) == 8 {
			dlo := int32(int64(leInt64(tlo)) / (86400 * 1e6))
			dhi := int32(int64(leInt64(thi)) / (86400 * 1e6))
			if dlo != pday || dhi != pday {
				t.Errorf("file %s: partition day %d but rows from day %d to %d", df.FilePath(), pday, dlo, dhi)
			}
		}
	}
	if len(days) < 2 {
		t.Errorf("events over three days landed in %d day partitions", len(days))
	}
	t.Logf("e2e: table holds %d rows in %d data files over %d days; every event exactly once", at.NumRows(), len(tasks), len(days))
}

func leInt64(b []byte) int64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return int64(v)
}

func mustField(t *testing.T, s *iceberg.Schema, name string) int {
	f, ok := s.FindFieldByName(name)
	if !ok {
		t.Fatalf("no field %s", name)
	}
	return f.ID
}

// checkDropped compares the consumer's dropped-records counters with what
// was produced.
func (in *instance) checkDropped(bad map[string]int) {
	in.t.Helper()
	m := in.scrape("consumer")
	for reason, n := range bad {
		key := fmt.Sprintf(`ingestor_consumer_records_dropped_total{dataset="clicks",reason=%q}`, reason)
		if got := m[key]; got != float64(n) {
			in.t.Errorf("%s = %v, want %d", key, got, n)
		}
	}
}

func TestRecordPathRunSQLite(t *testing.T) {
	w, in := newClicks(t, worldOptions{})
	defer in.dumpLogs()
	const events = 20000
	start := time.Now()
	good, bad := w.produceMixed(t, clicksTopic, 0, events, 97)
	sup := in.start("run")
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)
	landed := time.Since(start)
	in.checkDropped(bad)

	// More events while running, then an orderly stop.
	more, bad2 := w.produceMixed(t, clicksTopic, events, 3000, 97)
	good = append(good, more...)
	for r, n := range bad2 {
		bad[r] += n
	}
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 2*time.Minute)
	in.checkDropped(bad)
	commits := in.scrape("committer")[`ingestor_committer_commits_total{dataset="clicks"}`]
	sup.signal(syscall.SIGTERM)
	drain := sup.wait(t, 90*time.Second)
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after an orderly stop: %v", left)
	}
	w.checkTable(t, clicksTable, good)
	t.Logf("e2e: run layout, sqlite: %d events (%d good), first %d landed in %s, %v commits, drain %s",
		events+3000, len(good), events, landed.Round(time.Millisecond), commits, drain.Round(time.Millisecond))
}

func TestRecordPathSidecarsPostgres(t *testing.T) {
	w, in := newClicks(t, worldOptions{postgres: true})
	defer in.dumpLogs()
	const events = 12000
	good, bad := w.produceMixed(t, clicksTopic, 0, events, 101)
	roles := []string{"consumer", "uploader", "committer"}
	for _, r := range roles {
		in.start(r)
	}
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)
	in.checkDropped(bad)

	// Rows keep flowing; then SIGTERM to all three at once, as Kubernetes
	// does to the containers of a pod.
	more, _ := w.produceMixed(t, clicksTopic, events, 2000, 0)
	good = append(good, more...)
	time.Sleep(1500 * time.Millisecond)
	stopEach := func() {
		for _, r := range roles {
			in.proc(r).signal(syscall.SIGTERM)
		}
		for _, r := range roles {
			in.proc(r).wait(t, 90*time.Second)
		}
	}
	stopEach()
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after an orderly stop: %v", left)
	}
	if got := w.tableRows(context.Background(), clicksTable); got != int64(len(good)) {
		// Rows that had not reached the consumer before the stop stay in
		// Kafka; start again to take them.
		for _, r := range roles {
			in.start(r)
		}
		w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 2*time.Minute)
		stopEach()
	}
	w.checkTable(t, clicksTable, good)
	t.Logf("e2e: sidecar layout, postgres: %d events, %d good", events+2000, len(good))
}
