package e2e

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestDemo runs what `make run` runs, for a few seconds, and checks that a
// new user sees rows land: every good event produced is in the table once
// the demo stops in order.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "demo", "--dir", dir, "--duration", "12s", "--kafka-port", "0", "--every", "2s", "--rate", "3000")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	progress := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d produced=\d+ consumed=\d+ .* table_rows=(\d+)$`).FindAllSubmatch(out, -1)
	if len(progress) < 3 {
		t.Fatalf("want a progress line every 2 s, got %d:\n%s", len(progress), out)
	}
	m := regexp.MustCompile(`produced (\d+) good and (\d+) bad events since start; table web.clicks holds (\d+) rows`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no final line:\n%s", out)
	}
	good, _ := strconv.Atoi(string(m[1]))
	bad, _ := strconv.Atoi(string(m[2]))
	rows, _ := strconv.Atoi(string(m[3]))
	if good == 0 || bad == 0 || rows != good {
		t.Fatalf("demo produced %d good and %d bad events, table holds %d rows:\n%s", good, bad, rows, out)
	}
	t.Logf("e2e: demo: %d good events, %d bad, %d rows in the table", good, bad, rows)
}
