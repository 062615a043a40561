package devenv

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Samples are the values of one scrape, keyed by the metric name with its
// labels as the text format writes them: name{a="b",c="d"}.
type Samples map[string]float64

// Scrape reads a Prometheus text endpoint at addr (host:port).
func Scrape(ctx context.Context, addr string) (Samples, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	out := Samples{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Sum adds the values of every sample of metric name whose labels contain
// all of the given label="value" pairs.
func (s Samples) Sum(name string, labels ...string) float64 {
	var total float64
	for k, v := range s {
		base, lbl, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbl, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// ByLabel sums metric name's samples by the value of one label.
func (s Samples) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		base, lbl, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		for _, part := range strings.Split(strings.TrimSuffix(lbl, "}"), ",") {
			key, val, ok := strings.Cut(part, "=")
			if ok && key == label {
				out[strings.Trim(val, `"`)] += v
			}
		}
	}
	return out
}
