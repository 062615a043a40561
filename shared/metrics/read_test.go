package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestReadAndSumBy(t *testing.T) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"dataset", "partition"})
	g.WithLabelValues("a", "0").Set(2)
	g.WithLabelValues("a", "1").Set(3)
	g.WithLabelValues("b", "0").Set(7)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})
	c.Add(4)
	got := SumBy(Read(g), "dataset")
	if len(got) != 2 || got["a"] != 5 || got["b"] != 7 {
		t.Fatalf("SumBy = %v", got)
	}
	if s := Read(c); len(s) != 1 || s[0].Value != 4 || len(s[0].Labels) != 0 {
		t.Fatalf("Read(counter) = %+v", s)
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	h.Observe(1)
	if s := Read(h); len(s) != 0 {
		t.Fatalf("Read(histogram) = %+v, want nothing", s)
	}
}
