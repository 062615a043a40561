package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/walfile"
)

// peer is a second ingestor on the same topic, group and table, with
// its own WAL directory and metrics ports, as a second pod would be.
type peer struct {
	cfgPath string
	walDir  string
	metrics map[string]string
}

func (e *env) peer(name string, edit func(string) string) *peer {
	e.t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	in := &peer{walDir: filepath.Join(e.dir, "wal-"+name), metrics: map[string]string{}}
	doc := strings.Replace(string(b), fmt.Sprintf("dir: %q", e.walDir), fmt.Sprintf("dir: %q", in.walDir), 1)
	ports := freePorts(e.t, 5)
	for i, r := range []string{"supervisor", "consumer", "uploader", "committer", "maintainer"} {
		in.metrics[r] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		doc = strings.Replace(doc, fmt.Sprintf("%q", e.metrics[r]), fmt.Sprintf("%q", in.metrics[r]), 1)
	}
	if edit != nil {
		doc = edit(doc)
	}
	in.cfgPath = filepath.Join(e.dir, name+".yaml")
	if err := os.WriteFile(in.cfgPath, []byte(doc), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return in
}

func (e *env) scrapeAt(addr string) devenv.Samples {
	s, err := devenv.Scrape(context.Background(), addr)
	if err != nil {
		return devenv.Samples{}
	}
	return s
}

func walFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name.String())
	}
	return names
}

// TestDrainHandsOffToTheOtherInstance stops one of two instances of a
// consumer group in the middle of a stream: it exits 0 within the drain
// budget, the other instance owns all partitions at once (not after a
// session timeout), and the table has every event exactly once.
func TestDrainHandsOffToTheOtherInstance(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.peer("a", nil)
	b := e.peer("b", nil)
	pa := e.start("a", "run", "--config", a.cfgPath)
	pb := e.start("b", "run", "--config", b.cfgPath)

	assigned := func(in *peer) float64 {
		return e.scrapeAt(in.metrics["consumer"]).Sum("ingestor_consumer_partitions_assigned")
	}
	deadline := time.Now().Add(60 * time.Second)
	for !(assigned(a) > 0 && assigned(b) > 0 && assigned(a)+assigned(b) == float64(e.nParts)) {
		if time.Now().After(deadline) {
			t.Fatalf("partitions not shared: a=%v b=%v", assigned(a), assigned(b))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A steady stream, during which a gets SIGTERM.
	g, err := devenv.NewGenerator(e.kafka.Addrs(), e.topic)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Rate = 5000
	g.Time = eventTime
	const events = 40000
	genDone := make(chan error, 1)
	go func() { genDone <- g.Run(context.Background(), 0, events) }()
	time.Sleep(3 * time.Second)

	pa.signal(syscall.SIGTERM)
	sent := time.Now()
	var handOff time.Duration
	for {
		if assigned(b) == float64(e.nParts) {
			handOff = time.Since(sent)
			break
		}
		if time.Since(sent) > 30*time.Second {
			t.Fatalf("b owns %v of %d partitions 30 s after a's SIGTERM", assigned(b), e.nParts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	drain := pa.wait(t, 96*time.Second)
	drain += handOff
	if left := walFiles(t, a.walDir); len(left) > 0 {
		t.Errorf("a's WAL not empty after its drain: %v", left)
	}
	if err := <-genDone; err != nil {
		t.Fatal(err)
	}
	var good []int64
	for seq := int64(0); seq < events; seq++ {
		good = append(good, seq)
	}
	e.waitRows(events, 2*time.Minute)
	pb.signal(syscall.SIGTERM)
	pb.wait(t, 96*time.Second)
	if left := walFiles(t, b.walDir); len(left) > 0 {
		t.Errorf("b's WAL not empty after its drain: %v", left)
	}
	e.checkTable(good)
	t.Logf("e2e: two instances, %d events: hand-off to the other instance %s after SIGTERM, drain of the stopped instance %s",
		events, handOff.Round(time.Millisecond), drain.Round(time.Millisecond))
}
