package devenv

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The plan of --upserts 0.3: about 30 % of the events change an earlier
// key, a tenth of those delete it, half the deletes are tombstones when
// asked for; every changed key is one an earlier event inserted, and the
// same seq always gives the same plan.
func TestUpsertsPlan(t *testing.T) {
	u, err := NewUpserts(0.3, true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	var inserts, updates, deletes, tombstones int
	for seq := int64(0); seq < n; seq++ {
		key, op, tomb := u.Plan(seq)
		if k2, op2, t2 := u.Plan(seq); k2 != key || op2 != op || t2 != tomb {
			t.Fatalf("event %d planned twice differently", seq)
		}
		switch op {
		case OpInsert:
			inserts++
			if key != seq || tomb {
				t.Fatalf("insert %d writes key %d (tombstone %t), want its own seq", seq, key, tomb)
			}
			continue
		case OpUpdate:
			updates++
		case OpDelete:
			deletes++
		default:
			t.Fatalf("event %d: op %q", seq, op)
		}
		if tomb {
			if op != OpDelete {
				t.Fatalf("event %d: a tombstone for %s", seq, op)
			}
			tombstones++
		}
		if key >= seq {
			t.Fatalf("event %d changes key %d, not an earlier one", seq, key)
		}
		if _, kop, _ := u.Plan(key); kop != OpInsert {
			t.Fatalf("event %d changes key %d, whose event is a %s, not the insert of a key", seq, key, kop)
		}
	}
	share := func(a, b int) float64 { return float64(a) / float64(b) }
	if s := share(updates+deletes, n); math.Abs(s-0.3) > 0.01 {
		t.Errorf("%.3f of the events change a key, want 0.3", s)
	}
	if s := share(deletes, updates+deletes); math.Abs(s-0.1) > 0.01 {
		t.Errorf("%.3f of the changes delete, want 0.1", s)
	}
	if s := share(tombstones, deletes); math.Abs(s-0.5) > 0.05 {
		t.Errorf("%.3f of the deletes are tombstones, want 0.5", s)
	}

	u0, _ := NewUpserts(0, false)
	for seq := range int64(1000) {
		if key, op, _ := u0.Plan(seq); key != seq || op != OpInsert {
			t.Fatalf("ratio 0: event %d is %s of key %d, want an insert of its own", seq, op, key)
		}
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		if _, err := NewUpserts(bad, false); err == nil {
			t.Errorf("NewUpserts(%g) accepted", bad)
		}
	}
	noTomb, _ := NewUpserts(0.3, false)
	for seq := range int64(20_000) {
		if _, _, tomb := noTomb.Plan(seq); tomb {
			t.Fatalf("event %d is a tombstone without Tombstones", seq)
		}
	}
}

// The upsert shape's events are the base shape's with op and version
// added, as the mapping reads them, and the generator reports the
// partition and offset of each record it produced, tombstones included.
func TestUpsertShapeThroughTheGenerator(t *testing.T) {
	k, err := StartKafka(KafkaOptions{Partitions: 3, Topics: []string{"upserts"}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	g, err := NewGenerator(k.Addrs(), "upserts")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	plan, _ := NewUpserts(0.3, true)
	shape := UpsertShape(NarrowShape(), plan)
	if len(shape.Columns) != 17 || shape.Columns[15].Name != ColumnOp || shape.Columns[16].Name != ColumnVersion ||
		shape.Mapping[ColumnOp] != "op" || len(NarrowShape().Columns) != 15 {
		t.Fatalf("upsert shape columns %v", shape.Columns)
	}
	g.Payload = func(seq int64, at time.Time) ([]byte, []byte, error) {
		key, _, tomb := plan.Plan(seq)
		id := EventID(5, key)
		if tomb {
			return []byte(id), nil, nil
		}
		return []byte(id), shape.Append(nil, id, "tenant-001", seq, at), nil
	}
	type at struct {
		part int32
		off  int64
	}
	var mu sync.Mutex
	acked := map[at]int64{}
	g.Acked = func(seq int64, partition int32, offset int64) {
		mu.Lock()
		defer mu.Unlock()
		acked[at{partition, offset}] = seq
	}
	const n = 500
	if err := g.Run(context.Background(), 0, n); err != nil {
		t.Fatal(err)
	}
	if len(acked) != n {
		t.Fatalf("%d records acknowledged, want %d", len(acked), n)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.ConsumeTopics("upserts"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen, tombstones int
	for seen < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", seen, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			seq, ok := acked[at{r.Partition, r.Offset}]
			if !ok {
				t.Fatalf("record at %d/%d was not reported", r.Partition, r.Offset)
			}
			key, op, tomb := plan.Plan(seq)
			if string(r.Key) != EventID(5, key) {
				t.Errorf("event %d: Kafka key %s, want its row key %s", seq, r.Key, EventID(5, key))
			}
			if tomb {
				tombstones++
				if r.Value != nil {
					t.Errorf("event %d: a tombstone with a value", seq)
				}
				return
			}
			var ev struct {
				ID      string `json:"event_id"`
				Op      string `json:"op"`
				Version int64  `json:"version"`
			}
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				t.Fatalf("event %d: %v: %s", seq, err, r.Value)
			}
			if ev.ID != EventID(5, key) || ev.Op != op || ev.Version != seq {
				t.Errorf("event %d: id %s op %s version %d, want %s %s %d", seq, ev.ID, ev.Op, ev.Version, EventID(5, key), op, seq)
			}
		})
	}
	if tombstones == 0 {
		t.Error("no tombstone among the records")
	}
}
