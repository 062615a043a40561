package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Tenants of the generated events.
var Tenants = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"}

var (
	countries = []string{"US", "DE", "FR", "JP", "BR", "IN", "GB", "CA"}
	kinds     = []string{"view", "click", "purchase", "signup", "search"}
	agents    = []string{"firefox", "chrome", "safari", "edge"}
)

// Event is a generated click event, the shape the demo table maps.
type Event struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Meta struct {
		Tenant string `json:"tenant"`
		TS     string `json:"ts"`
	} `json:"meta"`
	Geo struct {
		Country string  `json:"country"`
		Lat     float64 `json:"lat"`
		Lon     float64 `json:"lon"`
	} `json:"geo"`
	User struct {
		ID    int64  `json:"id"`
		Agent string `json:"agent"`
	} `json:"user"`
	Amount   *float64 `json:"amount,omitempty"`
	Tags     []string `json:"tags"`
	Duration int64    `json:"duration_ms"`
}

// NewEvent returns event number seq at time ts; the same inputs give the
// same event.
func NewEvent(seq int64, ts time.Time) Event {
	r := rand.New(rand.NewPCG(uint64(seq), 7))
	var e Event
	e.ID = "evt-" + strconv.FormatInt(seq, 10)
	e.Kind = kinds[r.IntN(len(kinds))]
	e.Meta.Tenant = Tenants[r.IntN(len(Tenants))]
	e.Meta.TS = ts.UTC().Format(time.RFC3339Nano)
	e.Geo.Country = countries[r.IntN(len(countries))]
	e.Geo.Lat = float64(r.IntN(180_000))/1000 - 90
	e.Geo.Lon = float64(r.IntN(360_000))/1000 - 180
	e.User.ID = r.Int64N(1_000_000)
	e.User.Agent = agents[r.IntN(len(agents))]
	if e.Kind == "purchase" {
		a := float64(r.IntN(100_000)) / 100
		e.Amount = &a
	}
	e.Tags = []string{kinds[r.IntN(len(kinds))], countries[r.IntN(len(countries))]}
	e.Duration = r.Int64N(5000)
	return e
}

// BadRecords are payloads the demo mapping cannot decode, one per reason.
var BadRecords = map[string][]byte{
	"not_json":         []byte(`{"id": "broken", "meta": {`),
	"convert":          []byte(`{"id": "bad-ts", "meta": {"tenant": "acme", "ts": "yesterday"}}`),
	"missing_required": []byte(`{"meta": {"tenant": "acme", "ts": "2026-11-30T10:00:00Z"}}`),
}

// Generator produces events to a topic.
type Generator struct {
	cl    *kgo.Client
	topic string
	// Rate is events per second; 0 means as fast as possible.
	Rate int
	// BadEvery makes every BadEvery-th record a bad one (0: none).
	BadEvery int64
	// Time gives the timestamp of event seq; the current time when nil.
	Time func(seq int64) time.Time
	// Payload, when set, makes the key and value of good event seq at
	// time at instead of NewEvent; shapes.go has the benchmark's shapes.
	// An error stops Run, which returns it once what was produced before
	// it is acknowledged.
	Payload func(seq int64, at time.Time) (key, value []byte, err error)
	// Acked, when set, receives each good event's seq with the Kafka
	// partition and offset of its record once the broker acknowledged
	// it: what a scorer needs to order the versions of a key as Kafka
	// does. It is called from the producer's goroutines.
	Acked func(seq int64, partition int32, offset int64)

	produced atomic.Int64
	bad      atomic.Int64
}

// NewGenerator connects a producer to brokers.
// Extra client options (SASL, TLS) may follow.
func NewGenerator(brokers []string, topic string, opts ...kgo.Opt) (*Generator, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("generator client: %w", err)
	}
	return &Generator{cl: cl, topic: topic}, nil
}

// Produced returns the good and bad records produced so far.
func (g *Generator) Produced() (good, bad int64) { return g.produced.Load(), g.bad.Load() }

// Run produces events numbered from first until ctx ends or count events
// (good and bad) were produced when count > 0. It returns once every
// produced record was acknowledged.
func (g *Generator) Run(ctx context.Context, first, count int64) error {
	at := g.Time
	if at == nil {
		at = func(int64) time.Time { return time.Now() }
	}
	var tick <-chan time.Time
	batch := int64(1000)
	if g.Rate > 0 {
		per := time.Second / 20
		batch = max(int64(g.Rate)/20, 1)
		t := time.NewTicker(per)
		defer t.Stop()
		tick = t.C
	}
	var firstErr atomic.Pointer[error] // the first error a produce callback reported
	seq := first
	for count <= 0 || seq < first+count {
		if tick != nil {
			select {
			case <-ctx.Done():
				return g.flush(&firstErr)
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return g.flush(&firstErr)
		}
		for i := int64(0); i < batch && (count <= 0 || seq < first+count); i++ {
			var key, payload []byte
			good := true
			switch {
			case g.BadEvery > 0 && seq%g.BadEvery == g.BadEvery-1:
				payload = badRecord(seq)
				g.bad.Add(1)
				good = false
			case g.Payload != nil:
				var err error
				if key, payload, err = g.Payload(seq, at(seq)); err != nil {
					if ferr := g.flush(&firstErr); ferr != nil {
						return errors.Join(fmt.Errorf("payload of event %d: %w", seq, err), ferr)
					}
					return fmt.Errorf("payload of event %d: %w", seq, err)
				}
				g.produced.Add(1)
			default:
				payload, _ = json.Marshal(NewEvent(seq, at(seq)))
				g.produced.Add(1)
			}
			if key == nil {
				key = []byte(strconv.FormatInt(seq, 10))
			}
			s := seq
			g.cl.Produce(context.WithoutCancel(ctx), &kgo.Record{Key: key, Value: payload},
				func(r *kgo.Record, err error) {
					switch {
					case err != nil:
						firstErr.CompareAndSwap(nil, &err)
					case good && g.Acked != nil:
						g.Acked(s, r.Partition, r.Offset)
					}
				})
			seq++
		}
	}
	return g.flush(&firstErr)
}

func (g *Generator) flush(firstErr *atomic.Pointer[error]) error {
	if err := g.cl.Flush(context.Background()); err != nil {
		return fmt.Errorf("flush produced records: %w", err)
	}
	if err := firstErr.Load(); err != nil {
		return fmt.Errorf("produce: %w", *err)
	}
	return nil
}

// Close closes the producer.
func (g *Generator) Close() { g.cl.Close() }

func badRecord(seq int64) []byte {
	switch seq % 3 {
	case 0:
		return BadRecords["not_json"]
	case 1:
		return BadRecords["convert"]
	}
	return BadRecords["missing_required"]
}

// BadReason returns the drop reason of the bad record numbered seq.
func BadReason(seq int64) string {
	switch seq % 3 {
	case 0:
		return "not_json"
	case 1:
		return "convert"
	}
	return "missing_required"
}
