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

// produce sends count records (every badEvery-th one bad) and returns the
// sequence numbers of the good ones and the expected drops by reason.
func (e *env) produce(first, count, badEvery int64) (good []int64, bad map[string]int) {
	e.t.Helper()
	g, err := devenv.NewGenerator(e.kafka.Addrs(), e.topic, e.genOpts...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer g.Close()
	g.BadEvery = badEvery
	g.Time = eventTime
	if err := g.Run(context.Background(), first, count); err != nil {
		e.t.Fatal(err)
	}
	bad = map[string]int{}
	for seq := first; seq < first+count; seq++ {
		if badEvery > 0 && seq%badEvery == badEvery-1 {
			bad[devenv.BadReason(seq)]++
			continue
		}
		good = append(good, seq)
	}
	return good, bad
}

// checkTable scans the table back with iceberg-go and checks every good
// event is there exactly once, with the values it was produced with, in a
// data file whose partition matches its rows.
func (e *env) checkTable(good []int64) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	tbl, closeCat, err := e.openTable(ctx)
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
func (e *env) checkDropped(bad map[string]int) {
	e.t.Helper()
	m := e.scrape("consumer")
	for reason, n := range bad {
		key := fmt.Sprintf(`ingestor_consumer_records_dropped_total{dataset="clicks",reason=%q}`, reason)
		if got := m[key]; got != float64(n) {
			e.t.Errorf("%s = %v, want %d", key, got, n)
		}
	}
}

func TestRecordPathRunSQLite(t *testing.T) {
	e := newEnv(t, envOptions{})
	const events = 20000
	start := time.Now()
	good, bad := e.produce(0, events, 97)
	sup := e.start("run", "run")
	e.waitRows(int64(len(good)), 3*time.Minute)
	landed := time.Since(start)
	e.checkDropped(bad)

	// More events while running, then an orderly stop.
	more, bad2 := e.produce(events, 3000, 97)
	good = append(good, more...)
	for r, n := range bad2 {
		bad[r] += n
	}
	e.waitRows(int64(len(good)), 2*time.Minute)
	e.checkDropped(bad)
	commits := e.scrape("committer")[`ingestor_committer_commits_total{dataset="clicks"}`]
	sup.signal(syscall.SIGTERM)
	drain := sup.wait(t, 90*time.Second)
	if left := e.walLeft(); len(left) > 0 {
		t.Errorf("WAL not empty after an orderly stop: %v", left)
	}
	e.checkTable(good)
	t.Logf("e2e: run layout, sqlite: %d events (%d good), first %d landed in %s, %v commits, drain %s",
		events+3000, len(good), events, landed.Round(time.Millisecond), commits, drain.Round(time.Millisecond))
}

func TestRecordPathSidecarsPostgres(t *testing.T) {
	e := newEnv(t, envOptions{postgres: true})
	const events = 12000
	good, bad := e.produce(0, events, 101)
	var procs []*proc
	for _, r := range []string{"consumer", "uploader", "committer"} {
		procs = append(procs, e.start(r, r))
	}
	e.waitRows(int64(len(good)), 3*time.Minute)
	e.checkDropped(bad)

	// Rows keep flowing; then SIGTERM to all three at once, as Kubernetes
	// does to the containers of a pod.
	more, _ := e.produce(events, 2000, 0)
	good = append(good, more...)
	time.Sleep(1500 * time.Millisecond)
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		p.wait(t, 90*time.Second)
	}
	if left := e.walLeft(); len(left) > 0 {
		t.Errorf("WAL not empty after an orderly stop: %v", left)
	}
	if got := e.tableRows(context.Background()); got != int64(len(good)) {
		// Rows that had not reached the consumer before the stop stay in
		// Kafka; start again to take them.
		p := e.start("consumer-2", "consumer")
		u := e.start("uploader-2", "uploader")
		c := e.start("committer-2", "committer")
		e.waitRows(int64(len(good)), 2*time.Minute)
		for _, x := range []*proc{p, u, c} {
			x.signal(syscall.SIGTERM)
		}
		for _, x := range []*proc{p, u, c} {
			x.wait(t, 90*time.Second)
		}
	}
	e.checkTable(good)
	t.Logf("e2e: sidecar layout, postgres: %d events, %d good", events+2000, len(good))
}
