package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/tables"
)

// TestShapes checks that each shape's events are JSON of the announced
// size, that its mapping decodes them through the consumer's decoder, and
// that the wide shape has exactly 40 of its 200 columns set.
func TestShapes(t *testing.T) {
	cases := []struct {
		shape            string
		columns          int
		minSize, maxSize float64 // average bytes per event
		present          int     // non-null columns per event, 0: not checked
	}{
		{ShapeNarrow, 15, 550, 650, 0},
		{ShapeWide, 200, 1800, 2200, 40},
	}
	at := time.Date(2026, 11, 30, 12, 34, 56, 789123000, time.UTC)
	for _, c := range cases {
		t.Run(c.shape, func(t *testing.T) {
			s, err := ShapeByName(c.shape)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Columns) != c.columns || len(s.Mapping) != c.columns {
				t.Fatalf("%d columns and %d mapped, want %d", len(s.Columns), len(s.Mapping), c.columns)
			}
			for i, name := range []string{ColumnID, ColumnTenant, ColumnTS} {
				if s.Columns[i].Name != name {
					t.Fatalf("column %d is %s, want %s", i, s.Columns[i].Name, name)
				}
			}
			schema, err := tables.BuildSchema(s.Columns)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := decode.New(schema, s.Mapping)
			if err != nil {
				t.Fatal(err)
			}
			const n = 2000
			var total int
			for seq := int64(0); seq < n; seq++ {
				id := EventID(7, seq)
				payload := s.Append(nil, id, "tenant-003", seq, at)
				total += len(payload)
				if !json.Valid(payload) {
					t.Fatalf("event %d is not JSON: %s", seq, payload)
				}
				row, err := dec.DecodeInto(nil, payload)
				if err != nil {
					t.Fatalf("event %d: %v\n%s", seq, err, payload)
				}
				if row[0] != id || row[1] != "tenant-003" {
					t.Fatalf("event %d: id %v tenant %v", seq, row[0], row[1])
				}
				if c.present > 0 {
					var set int
					for _, v := range row {
						if v != nil {
							set++
						}
					}
					if set != c.present {
						t.Fatalf("event %d has %d columns set, want %d", seq, set, c.present)
					}
				}
			}
			t.Logf("%s: %.0f bytes per event on average", c.shape, float64(total)/n)
			if avg := float64(total) / n; avg < c.minSize || avg > c.maxSize {
				t.Errorf("events average %.0f bytes, want %.0f to %.0f", avg, c.minSize, c.maxSize)
			}
			a := s.Append(nil, EventID(7, 42), "tenant-003", 42, at)
			b := s.Append(nil, EventID(7, 42), "tenant-003", 42, at)
			if string(a) != string(b) {
				t.Error("the same seq and time gave two different events")
			}
		})
	}
	if _, err := ShapeByName("round"); err == nil {
		t.Error("unknown shape accepted")
	}
}

func TestEventID(t *testing.T) {
	for _, c := range []struct {
		run uint32
		seq int64
	}{{0, 0}, {1, 1}, {0xdeadbeef, 999_999}, {math.MaxUint32, 1<<48 - 1}} {
		id := EventID(c.run, c.seq)
		run, seq, ok := ParseEventID(id)
		if !ok || run != c.run || seq != c.seq {
			t.Errorf("EventID(%d, %d) = %s parses as %d, %d, %v", c.run, c.seq, id, run, seq, ok)
		}
	}
	for _, bad := range []string{"", "evt-1", "0000000x-0000-4000-8000-000000000001", "00000001-0000-4000-8000-00000000000g"} {
		if _, _, ok := ParseEventID(bad); ok {
			t.Errorf("ParseEventID(%q) ok", bad)
		}
	}
}

func TestTenancy(t *testing.T) {
	const events = 400_000
	cases := []struct {
		keys    string
		tenants int
		top     float64 // expected share of tenant 0
	}{
		{KeysUniform, 64, 1.0 / 64},
		{KeysSkewed, 64, 0.25},
		{KeysSkewed, 8, 0.25},
		{KeysSkewed, 2, 0.5}, // already above a quarter: uniform
		{KeysUniform, 1, 1},
	}
	for _, c := range cases {
		tn, err := NewTenancy(c.keys, c.tenants)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i := range tn.Len() {
			sum += tn.Share(i)
		}
		if math.Abs(sum-1) > 1e-9 || math.Abs(tn.Share(0)-c.top) > 1e-6 {
			t.Errorf("%s/%d: shares sum to %v, first %v, want 1 and %v", c.keys, c.tenants, sum, tn.Share(0), c.top)
		}
		counts := make([]int, tn.Len())
		for seq := int64(0); seq < events; seq++ {
			counts[tn.Of(seq)]++
		}
		for i, n := range counts {
			want := tn.Share(i) * events
			// Five standard deviations of a binomial count.
			if tol := 5*math.Sqrt(want) + 1; math.Abs(float64(n)-want) > tol {
				t.Errorf("%s/%d: tenant %d got %d events, want %.0f ± %.0f", c.keys, c.tenants, i, n, want, tol)
			}
		}
		if c.keys == KeysSkewed && c.tenants > 4 && !(tn.Share(1) < tn.Share(0) && tn.Share(c.tenants-1) < tn.Share(1)) {
			t.Errorf("%s/%d: shares do not decrease", c.keys, c.tenants)
		}
	}
	for _, bad := range []struct {
		keys string
		n    int
	}{{"zipf", 8}, {KeysUniform, 0}} {
		if _, err := NewTenancy(bad.keys, bad.n); err == nil {
			t.Errorf("NewTenancy(%q, %d) accepted", bad.keys, bad.n)
		}
	}
}

// TestGeneratorPayload produces through a real broker with a Payload
// function and reads back the keys and values it made, with every
// BadEvery-th record still a bad one.
func TestGeneratorPayload(t *testing.T) {
	k, err := StartKafka(KafkaOptions{Partitions: 2, Topics: []string{"shapes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	g, err := NewGenerator(k.Addrs(), "shapes")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	shape := NarrowShape()
	ten, err := NewTenancy(KeysSkewed, 8)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g.Time = func(int64) time.Time { return at }
	g.BadEvery = 10
	g.Payload = func(seq int64, at time.Time) ([]byte, []byte, error) {
		name := ten.Name(ten.Of(seq))
		return []byte(name), shape.Append(nil, EventID(3, seq), name, seq, at), nil
	}
	const n = 200
	if err := g.Run(context.Background(), 0, n); err != nil {
		t.Fatal(err)
	}
	if good, bad := g.Produced(); good != 180 || bad != 20 {
		t.Fatalf("produced %d good and %d bad, want 180 and 20", good, bad)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs()...), kgo.ConsumeTopics("shapes"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", seen, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var ev struct {
				ID     string `json:"event_id"`
				Tenant string `json:"tenant"`
			}
			// A bad record keeps the generator's own key, its number.
			if seq, err := strconv.ParseInt(string(r.Key), 10, 64); err == nil {
				if seq%10 != 9 {
					t.Errorf("record %d is a bad one, want only every 10th", seq)
				}
				return
			}
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				t.Errorf("record with key %q: %v", r.Key, err)
				return
			}
			_, seq, ok := ParseEventID(ev.ID)
			if !ok || string(r.Key) != ev.Tenant || ev.Tenant != ten.Name(ten.Of(seq)) {
				t.Errorf("record key %q, event %s of tenant %s", r.Key, ev.ID, ev.Tenant)
			}
		})
	}
}

// A Payload that fails stops the generator: Run returns the error, naming
// the event, once the events before it are acknowledged, instead of the
// process dying with a run that cannot be scored.
func TestGeneratorPayloadError(t *testing.T) {
	k, err := StartKafka(KafkaOptions{Partitions: 1, Topics: []string{"fail"}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	g, err := NewGenerator(k.Addrs(), "fail")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	bad := errors.New("column amount: no encoding")
	g.Payload = func(seq int64, at time.Time) ([]byte, []byte, error) {
		if seq == 7 {
			return nil, nil, bad
		}
		return nil, []byte(`{}`), nil
	}
	err = g.Run(context.Background(), 0, 100)
	if !errors.Is(err, bad) || !strings.Contains(err.Error(), "event 7") {
		t.Fatalf("Run returned %v, want the payload's error of event 7", err)
	}
	if good, _ := g.Produced(); good != 7 {
		t.Fatalf("produced %d events before the failing one, want 7", good)
	}
}
