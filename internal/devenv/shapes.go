package devenv

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/icewal/ingestor/shared/config"
)

// Shape names, the values of `ingestor bench --shape`.
const (
	// ShapeNarrow is a click-stream event of about 600 bytes with nested
	// objects, 15 of whose fields are mapped to columns.
	ShapeNarrow = "narrow"
	// ShapeWide is an event of about 2 KB with 200 columns, of which about
	// 40 are present in each event and the rest are null.
	ShapeWide = "wide"
)

// Key distributions, the values of `ingestor bench --keys`.
const (
	// KeysUniform spreads events evenly over the tenants.
	KeysUniform = "uniform"
	// KeysSkewed draws tenants from a Zipf distribution whose first tenant
	// carries a quarter of the events.
	KeysSkewed = "skewed"
)

// skewedTopShare is the share of the events the first tenant carries under
// KeysSkewed.
const skewedTopShare = 0.25

// Every shape starts with these three columns, in this order: the scorer
// of the benchmark reads them back.
const (
	// ColumnID holds EventID(run, seq), a string.
	ColumnID = "event_id"
	// ColumnTenant holds the tenant's name, a string.
	ColumnTenant = "tenant"
	// ColumnTS holds the time the generator made the event (timestamptz).
	ColumnTS = "ts"
)

// Shape is a kind of generated JSON event, with the table columns and the
// customMapping that map it. The same seq gives the same event but for
// its time.
type Shape struct {
	// Name is ShapeNarrow or ShapeWide.
	Name string
	// Columns of the table, ColumnID, ColumnTenant and ColumnTS first.
	Columns []config.Column
	// Mapping is the dataset's customMapping: column -> JMESPath.
	Mapping map[string]string

	appendEvent func(dst []byte, id, tenant string, seq int64, at time.Time) []byte
}

// Append appends the JSON of event seq of tenant, made at time at, to dst.
func (s Shape) Append(dst []byte, id, tenant string, seq int64, at time.Time) []byte {
	return s.appendEvent(dst, id, tenant, seq, at)
}

// ShapeByName returns ShapeNarrow's or ShapeWide's shape.
func ShapeByName(name string) (Shape, error) {
	switch name {
	case ShapeNarrow:
		return NarrowShape(), nil
	case ShapeWide:
		return WideShape(), nil
	}
	return Shape{}, fmt.Errorf("unknown event shape %q (want %s or %s)", name, ShapeNarrow, ShapeWide)
}

// EventID is the id of event seq of a benchmark run: a UUID-like string
// whose first group is the run and whose last group is seq, so that a
// scorer recognises its own events and their numbers.
func EventID(run uint32, seq int64) string {
	b := make([]byte, 0, 36)
	b = appendHex(b, uint64(run), 8)
	b = append(b, "-0000-4000-8000-"...)
	b = appendHex(b, uint64(seq), 12)
	return string(b)
}

// ParseEventID returns the run and seq of an EventID.
func ParseEventID(id string) (run uint32, seq int64, ok bool) {
	if len(id) != 36 || id[8:24] != "-0000-4000-8000-" {
		return 0, 0, false
	}
	r, err := strconv.ParseUint(id[:8], 16, 32)
	if err != nil {
		return 0, 0, false
	}
	s, err := strconv.ParseUint(id[24:], 16, 48)
	if err != nil {
		return 0, 0, false
	}
	return uint32(r), int64(s), true
}

func appendHex(b []byte, v uint64, width int) []byte {
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		b = append(b, digits[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// Tenancy assigns events to tenants, deterministically by seq.
type Tenancy struct {
	names []string
	// cum[i] is the probability of a tenant <= i; cum[len-1] is 1.
	cum []float64
}

// NewTenancy returns n tenants (tenant-000, tenant-001, ...) with keys
// KeysUniform or KeysSkewed. Skewed draws tenant i (from 1) with weight
// 1/i^s, s chosen so that the first tenant carries 25 % of the events (with
// 4 tenants or fewer, that is already the uniform share, and s is 0).
func NewTenancy(keys string, n int) (*Tenancy, error) {
	if n < 1 {
		return nil, fmt.Errorf("tenants: want at least 1, got %d", n)
	}
	var s float64
	switch keys {
	case KeysUniform:
	case KeysSkewed:
		s = zipfExponent(n, skewedTopShare)
	default:
		return nil, fmt.Errorf("unknown key distribution %q (want %s or %s)", keys, KeysUniform, KeysSkewed)
	}
	t := &Tenancy{names: make([]string, n), cum: make([]float64, n)}
	var total float64
	for i := range n {
		t.names[i] = fmt.Sprintf("tenant-%03d", i)
		total += math.Pow(float64(i+1), -s)
		t.cum[i] = total
	}
	for i := range t.cum {
		t.cum[i] /= total
	}
	t.cum[n-1] = 1
	return t, nil
}

// zipfExponent finds, by bisection, the exponent s for which the first of
// n tenants weighted 1/i^s has share top.
func zipfExponent(n int, top float64) float64 {
	share := func(s float64) float64 {
		var sum float64
		for i := 1; i <= n; i++ {
			sum += math.Pow(float64(i), -s)
		}
		return 1 / sum
	}
	if share(0) >= top {
		return 0
	}
	lo, hi := 0.0, 8.0
	for range 60 {
		mid := (lo + hi) / 2
		if share(mid) < top {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Len returns the number of tenants.
func (t *Tenancy) Len() int { return len(t.names) }

// Name returns the name of tenant i.
func (t *Tenancy) Name(i int) string { return t.names[i] }

// Share returns the expected share of the events that tenant i carries.
func (t *Tenancy) Share(i int) float64 {
	if i == 0 {
		return t.cum[0]
	}
	return t.cum[i] - t.cum[i-1]
}

// Of returns the tenant of event seq.
func (t *Tenancy) Of(seq int64) int {
	u := float64(splitmix(uint64(seq)^0x5bd1e995)>>11) / (1 << 53)
	lo, hi := 0, len(t.cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if u < t.cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// splitmix is SplitMix64's output function: a cheap, well-mixed hash that
// makes the generator's choices without a random source to allocate.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// bits is a stream of pseudo-random numbers for one event.
type bits struct{ s uint64 }

func newBits(seq int64, salt uint64) bits { return bits{s: splitmix(uint64(seq) ^ salt)} }

func (b *bits) next() uint64 {
	b.s += 0x9e3779b97f4a7c15
	return splitmix(b.s)
}

// intn returns a number in [0, n).
func (b *bits) intn(n int) int { return int(b.next() % uint64(n)) }

// tsLayout writes microseconds always, so that events have a steady size.
const tsLayout = "2006-01-02T15:04:05.000000Z07:00"

func appendKey(b []byte, key string) []byte {
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendString appends a JSON string; the generated texts need no escape.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

var (
	narrowKinds     = []string{"view", "click", "purchase", "signup", "search", "add_to_cart"}
	narrowCountries = []string{"US", "DE", "FR", "JP", "BR", "IN", "GB", "CA", "ES", "IT"}
	narrowPlans     = []string{"free", "starter", "premium", "enterprise"}
	narrowOS        = []string{"android", "ios", "windows", "macos", "linux"}
	narrowModels    = []string{"Pixel 9", "iPhone 16", "Galaxy S25", "ThinkPad X1", "MacBook Air"}
	narrowCurrency  = []string{"EUR", "USD", "GBP", "JPY", "BRL"}
	narrowPages     = []string{"checkout/confirm?step=3", "product/8812-running-shoes", "search?q=waterproof+jacket", "cart", "account/orders?page=2"}
	narrowReferrers = []string{"https://www.example.org/search?q=shoes", "https://news.example.net/article/2026/11/best-deals", "https://social.example.com/share/ab12cd"}
	narrowTags      = []string{"sale", "mobile", "newsletter", "returning", "campaign-fall"}
)

// NarrowShape is a click-stream event of about 600 bytes: ids, a
// timestamp and nested objects (user, device, session, order, page,
// flags, tags), 15 of whose fields are columns; the other fields are read
// past by the decoder, as in real events.
func NarrowShape() Shape {
	cols := []config.Column{
		{Name: ColumnID, Type: "string", Required: true},
		{Name: ColumnTenant, Type: "string", Required: true},
		{Name: ColumnTS, Type: "timestamptz", Required: true},
		{Name: "event_type", Type: "string"},
		{Name: "user_id", Type: "long"},
		{Name: "email", Type: "string"},
		{Name: "country", Type: "string"},
		{Name: "plan", Type: "string"},
		{Name: "os", Type: "string"},
		{Name: "os_version", Type: "string"},
		{Name: "session_id", Type: "string"},
		{Name: "duration_ms", Type: "long"},
		{Name: "amount", Type: "decimal(12,2)"},
		{Name: "currency", Type: "string"},
		{Name: "url", Type: "string"},
	}
	mapping := map[string]string{
		ColumnID: "event_id", ColumnTenant: "tenant", ColumnTS: "occurred_at",
		"event_type": "event_type", "user_id": "user.id", "email": "user.email",
		"country": "user.country", "plan": "user.plan", "os": "device.os",
		"os_version": "device.version", "session_id": "session.id",
		"duration_ms": "session.duration_ms", "amount": "order.amount",
		"currency": "order.currency", "url": "page.url",
	}
	return Shape{Name: ShapeNarrow, Columns: cols, Mapping: mapping, appendEvent: appendNarrow}
}

func appendNarrow(b []byte, id, tenant string, seq int64, at time.Time) []byte {
	r := newBits(seq, 0x6e6172726f77)
	kind := narrowKinds[r.intn(len(narrowKinds))]
	user := 100_000_000 + r.intn(900_000_000)
	b = append(b, '{')
	b = appendKey(b, "event_id")
	b = appendString(b, id)
	b = append(b, ',')
	b = appendKey(b, "tenant")
	b = appendString(b, tenant)
	b = append(b, ',')
	b = appendKey(b, "event_type")
	b = appendString(b, kind)
	b = append(b, ',')
	b = appendKey(b, "occurred_at")
	b = append(b, '"')
	b = at.UTC().AppendFormat(b, tsLayout)
	b = append(b, `","user":{"id":`...)
	b = strconv.AppendInt(b, int64(user), 10)
	b = append(b, `,"email":"user`...)
	b = strconv.AppendInt(b, int64(user), 10)
	b = append(b, `@example.com","country":`...)
	b = appendString(b, narrowCountries[r.intn(len(narrowCountries))])
	b = append(b, `,"plan":`...)
	b = appendString(b, narrowPlans[r.intn(len(narrowPlans))])
	b = append(b, `},"device":{"os":`...)
	b = appendString(b, narrowOS[r.intn(len(narrowOS))])
	b = append(b, `,"version":"`...)
	b = strconv.AppendInt(b, int64(10+r.intn(8)), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(r.intn(10)), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(r.intn(20)), 10)
	b = append(b, `","model":`...)
	b = appendString(b, narrowModels[r.intn(len(narrowModels))])
	b = append(b, `},"session":{"id":"sess-`...)
	b = appendHex(b, r.next(), 12)
	b = append(b, `","duration_ms":`...)
	b = strconv.AppendInt(b, int64(r.intn(600_000)), 10)
	b = append(b, `},"order":{"amount":`...)
	if kind == "purchase" || kind == "add_to_cart" {
		cents := 100 + r.intn(500_000)
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(cents/100), 10)
		b = append(b, '.', byte('0'+cents/10%10), byte('0'+cents%10), '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"currency":`...)
	b = appendString(b, narrowCurrency[r.intn(len(narrowCurrency))])
	b = append(b, `,"items":`...)
	b = strconv.AppendInt(b, int64(1+r.intn(9)), 10)
	b = append(b, `,"coupon":null},"page":{"url":"https://shop.example.com/`...)
	b = append(b, narrowPages[r.intn(len(narrowPages))]...)
	b = append(b, `","referrer":`...)
	b = appendString(b, narrowReferrers[r.intn(len(narrowReferrers))])
	b = append(b, `},"flags":{"beta":`...)
	b = strconv.AppendBool(b, r.intn(4) == 0)
	b = append(b, `,"internal":`...)
	b = strconv.AppendBool(b, r.intn(50) == 0)
	b = append(b, `},"tags":[`...)
	b = appendString(b, narrowTags[r.intn(len(narrowTags))])
	b = append(b, ',')
	b = appendString(b, narrowTags[r.intn(len(narrowTags))])
	return append(b, "]}"...)
}

// The wide shape's attribute columns: a001 .. a197, beside event_id,
// tenant and ts, 200 columns in all. Those up to wideTopLevel are
// top-level keys of the event; the others are keys of its "props" object.
const (
	wideAttrs    = 197
	wideTopLevel = 98
	// widePresent attributes are present in each event, so that with the
	// three fixed columns 40 of the 200 columns have a value.
	widePresent = 37
)

// wideType is the Iceberg type of attribute i (1-based): 40 % strings,
// 30 % longs, 20 % doubles, 10 % booleans.
func wideType(i int) string {
	switch i % 10 {
	case 0, 1, 2, 3:
		return "string"
	case 4, 5, 6:
		return "long"
	case 7, 8:
		return "double"
	}
	return "boolean"
}

func wideName(i int) string { return fmt.Sprintf("a%03d", i) }

// wideNames holds "a001" .. "a197" at index i-1, so that appending a key
// allocates nothing.
var wideNames = func() []string {
	n := make([]string, wideAttrs)
	for i := range n {
		n[i] = wideName(i + 1)
	}
	return n
}()

// wideTexts are the string values of the wide shape: 512 texts of 40 to
// 140 characters of words, which compress as real text does.
var wideTexts = func() []string {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
		"juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
		"tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "0", "1", "2", "3", "42", "2026"}
	out := make([]string, 512)
	for i := range out {
		r := newBits(int64(i), 0x74657874)
		n := 40 + r.intn(101)
		var b []byte
		for len(b) < n {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, words[r.intn(len(words))]...)
		}
		out[i] = string(b[:n])
	}
	return out
}()

// WideShape is an event of about 2 KB for a table of 200 columns (the
// shape of open ingest benchmarks of wide, sparse telemetry): event_id,
// tenant and ts, then 197 typed attributes a001 .. a197 of which 37, drawn
// anew for each event, are present; a001 .. a098 are top-level keys and
// the others are in a nested "props" object.
func WideShape() Shape {
	cols := []config.Column{
		{Name: ColumnID, Type: "string", Required: true},
		{Name: ColumnTenant, Type: "string", Required: true},
		{Name: ColumnTS, Type: "timestamptz", Required: true},
	}
	mapping := map[string]string{ColumnID: "event_id", ColumnTenant: "tenant", ColumnTS: "ts"}
	for i := 1; i <= wideAttrs; i++ {
		name := wideName(i)
		cols = append(cols, config.Column{Name: name, Type: wideType(i)})
		if i <= wideTopLevel {
			mapping[name] = name
		} else {
			mapping[name] = "props." + name
		}
	}
	return Shape{Name: ShapeWide, Columns: cols, Mapping: mapping, appendEvent: appendWide}
}

func appendWide(b []byte, id, tenant string, seq int64, at time.Time) []byte {
	r := newBits(seq, 0x77696465)
	// A partial Fisher-Yates shuffle draws the present attributes; they
	// are then sorted so that the top-level ones come before "props".
	var idx [wideAttrs]uint8
	for i := range idx {
		idx[i] = uint8(i + 1)
	}
	for i := range widePresent {
		j := i + r.intn(wideAttrs-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	chosen := idx[:widePresent]
	for i := 1; i < len(chosen); i++ {
		for j := i; j > 0 && chosen[j] < chosen[j-1]; j-- {
			chosen[j], chosen[j-1] = chosen[j-1], chosen[j]
		}
	}
	b = append(b, '{')
	b = appendKey(b, "event_id")
	b = appendString(b, id)
	b = append(b, ',')
	b = appendKey(b, "tenant")
	b = appendString(b, tenant)
	b = append(b, ',')
	b = appendKey(b, "ts")
	b = append(b, '"')
	b = at.UTC().AppendFormat(b, tsLayout)
	b = append(b, '"')
	inProps := false
	for _, a := range chosen {
		i := int(a)
		if i > wideTopLevel && !inProps {
			b = append(b, `,"props":{`...)
			inProps = true
		} else {
			b = append(b, ',')
		}
		b = appendKey(b, wideNames[i-1])
		switch wideType(i) {
		case "string":
			b = appendString(b, wideTexts[r.intn(len(wideTexts))])
		case "long":
			b = strconv.AppendInt(b, int64(r.next()%1_000_000_000_000), 10)
		case "double":
			b = strconv.AppendFloat(b, float64(r.intn(100_000_000))/1000, 'f', -1, 64)
		default:
			b = strconv.AppendBool(b, r.intn(2) == 0)
		}
	}
	if inProps {
		b = append(b, '}')
	}
	return append(b, '}')
}
