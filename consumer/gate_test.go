package consumer

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
)

// TestOperatorAndDiskPausesAreDistinct drives the gate of two datasets
// through operator and disk pauses and looks at what each dataset's Kafka
// client was told: resuming one reason never lifts the other.
func TestOperatorAndDiskPausesAreDistinct(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders_v1", "clicks_v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	m := newMetrics(prometheus.NewRegistry())
	g := newGate(discardLogger(), m, 80)
	loops := map[string]*loop{}
	for _, ds := range []config.Dataset{{Name: "orders", Topic: "orders_v1"}, {Name: "clicks", Topic: "clicks_v1"}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(ds.Topic))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		loops[ds.Name] = &loop{ds: ds, cl: cl}
		g.add(loops[ds.Name])
	}
	entry := &pause.Entry{By: "alice (uid 1000)", Reason: "catalog migration"}

	steps := []struct {
		name string
		do   func()
		// paused are the datasets whose client must not fetch.
		paused []string
		// operator and disk are the metric's values per dataset.
		operator, disk map[string]float64
	}{
		{"operator pauses orders", func() { g.setOperator("orders", entry) },
			[]string{"orders"}, map[string]float64{"orders": 1, "clicks": 0}, map[string]float64{"orders": 0, "clicks": 0}},
		{"volume passes the watermark", func() { g.observe(85) },
			[]string{"orders", "clicks"}, map[string]float64{"orders": 1, "clicks": 0}, map[string]float64{"orders": 1, "clicks": 1}},
		{"operator resumes orders: the disk pause stays", func() { g.setOperator("orders", nil) },
			[]string{"orders", "clicks"}, map[string]float64{"orders": 0, "clicks": 0}, map[string]float64{"orders": 1, "clicks": 1}},
		{"operator pauses clicks under the disk pause", func() { g.setOperator("clicks", entry) },
			[]string{"orders", "clicks"}, map[string]float64{"orders": 0, "clicks": 1}, map[string]float64{"orders": 1, "clicks": 1}},
		{"volume drains: the operator's pause stays", func() { g.observe(50) },
			[]string{"clicks"}, map[string]float64{"orders": 0, "clicks": 1}, map[string]float64{"orders": 0, "clicks": 0}},
		{"operator resumes clicks", func() { g.setOperator("clicks", nil) },
			nil, map[string]float64{"orders": 0, "clicks": 0}, map[string]float64{"orders": 0, "clicks": 0}},
		{"the record at start pauses orders", func() { g.setOperatorAll(pause.Record{Datasets: map[string]pause.Entry{"orders": *entry}}) },
			[]string{"orders"}, map[string]float64{"orders": 1, "clicks": 0}, map[string]float64{"orders": 0, "clicks": 0}},
	}
	for _, st := range steps {
		st.do()
		for name, l := range loops {
			clientPaused := slices.Contains(l.cl.PauseFetchTopics(), l.ds.Topic)
			if want := slices.Contains(st.paused, name); clientPaused != want || g.pausedFor(name) != want {
				t.Errorf("%s: %s client paused %v, gate says %v, want %v", st.name, name, clientPaused, g.pausedFor(name), want)
			}
			if got := testutil.ToFloat64(m.paused.WithLabelValues(name, PauseOperator)); got != st.operator[name] {
				t.Errorf("%s: ingestor_consumer_paused{dataset=%q,reason=\"operator\"} = %v, want %v", st.name, name, got, st.operator[name])
			}
			if got := testutil.ToFloat64(m.paused.WithLabelValues(name, PauseDisk)); got != st.disk[name] {
				t.Errorf("%s: ingestor_consumer_paused{dataset=%q,reason=\"disk\"} = %v, want %v", st.name, name, got, st.disk[name])
			}
		}
	}
}

// TestPauseRecordHoldsAtStart starts a consumer on a WAL directory whose
// pause record names its dataset: it fetches nothing until Resume.
func TestPauseRecordHoldsAtStart(t *testing.T) {
	e := startConsumer(t, func(c *Consumer) {
		dir := c.cfg.Ingestion.WAL.Dir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rec := pause.Record{Datasets: map[string]pause.Entry{"clicks": {By: "alice (uid 1000)", Reason: "catalog migration", Since: time.Now()}}}
		if err := pause.Write(dir, rec); err != nil {
			t.Fatal(err)
		}
	})
	e.produce(t, 0, 100)
	time.Sleep(3 * time.Second)
	if got := e.consumed(); got != 0 {
		t.Fatalf("a dataset the record pauses consumed %v records", got)
	}
	if got := testutil.ToFloat64(e.c.m.paused.WithLabelValues("clicks", PauseOperator)); got != 1 {
		t.Fatalf("ingestor_consumer_paused{reason=operator} = %v, want 1", got)
	}
	st := e.c.Status().Datasets["clicks"]
	if op := st.OperatorPause; op == nil || op.By != "alice (uid 1000)" || op.Reason != "catalog migration" {
		t.Fatalf("status of clicks = %v, want the operator's pause", st)
	}
	if err := e.c.Resume(context.Background(), "clicks"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records consumed after resume", 20*time.Second, func() bool { return e.consumed() == 100 })
}
