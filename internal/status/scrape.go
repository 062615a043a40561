package status

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample is one series of a scraped metric.
type sample struct {
	labels map[string]string
	value  float64
}

// samples are the gauge and counter series of one scrape, by metric name.
type samples map[string][]sample

// scrapeMetrics reads the Prometheus text endpoint at addr.
func scrapeMetrics(ctx context.Context, client *http.Client, addr string) (samples, error) {
	body, err := get(ctx, client, "http://"+addr+"/metrics")
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse metrics from %s: %w", addr, err)
	}
	out := samples{}
	for name, f := range families {
		for _, m := range f.Metric {
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Untyped != nil:
				v = m.Untyped.GetValue()
			default:
				continue
			}
			out[name] = append(out[name], sample{labels: labelMap(m.Label), value: v})
		}
	}
	return out, nil
}

func labelMap(pairs []*dto.LabelPair) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, l := range pairs {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

// sum adds the series of name whose labels hold every key=value of match,
// and reports whether there was any.
func (s samples) sum(name string, match map[string]string) (float64, bool) {
	var total float64
	found := false
	for _, smp := range s[name] {
		if matches(smp.labels, match) {
			total += smp.value
			found = true
		}
	}
	return total, found
}

// by adds the series of name that match, by the value of label.
func (s samples) by(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, smp := range s[name] {
		if matches(smp.labels, match) {
			out[smp.labels[label]] += smp.value
		}
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
