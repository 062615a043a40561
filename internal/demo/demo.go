package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/wirevalues"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/supervisor"
)

// Options configure the demo.
type Options struct {
	// Dir holds the broker's data, the catalog, the warehouse and the WAL.
	Dir string
	// KafkaPort is the broker's port; a free one is used when it is taken.
	KafkaPort int
	// Rate is generated events per second.
	Rate int
	// Every is the time between two progress lines.
	Every time.Duration
	// Format is the records' value format: json (the default, the
	// generator's click events), avro or protobuf (the narrow bench
	// shape's events behind the Confluent header, their schema in a
	// registry the demo starts).
	Format string
	// Out receives the progress lines.
	Out io.Writer
	// Log receives the logs of the supervisor and its roles, JSON lines;
	// a file in Dir when nil.
	Log io.Writer
}

// DefaultOptions are the options of `ingestor demo`.
func DefaultOptions() Options {
	return Options{
		Dir:       filepath.Join(os.TempDir(), "ingestor-demo"),
		KafkaPort: 9092,
		Rate:      2000,
		Every:     3 * time.Second,
		Format:    config.FormatJSON,
		Out:       os.Stdout,
	}
}

// Run runs the demo until ctx is cancelled, then drains and returns.
func Run(ctx context.Context, o Options) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("demo dir: %w", err)
	}
	if o.Log == nil {
		f, err := os.OpenFile(filepath.Join(o.Dir, "ingestor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("demo log: %w", err)
		}
		defer f.Close()
		o.Log = f
	}
	logger := slog.New(slog.NewJSONHandler(o.Log, nil)).With("role", "supervisor")
	vals, err := wirevalues.New(o.Format, TopicOf(o.Format), devenv.NarrowShape())
	if err != nil {
		return err
	}
	defer vals.Close()
	topic := TopicOf(vals.Format)
	port := o.KafkaPort
	if !portFree(port) {
		port = 0
	}
	k, err := devenv.StartKafka(devenv.KafkaOptions{
		Port: port, Partitions: 4, Topics: []string{topic}, DataDir: filepath.Join(o.Dir, "kafka"),
	})
	if err != nil {
		return err
	}
	defer k.Close()

	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(o.Dir, "ingestor.yaml")
	if err := os.WriteFile(cfgPath, []byte(Config(o.Dir, k.Addrs()[0], ports, vals.Format, vals.RegistryURL())), 0o644); err != nil {
		return fmt.Errorf("write demo config: %w", err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return err
	}
	if _, err := tables.Load(ctx, cat, cfg.Datasets[0]); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "demo: broker %s, topic %s, table %s, config %s\n", k.Addrs()[0], topic, cfg.Datasets[0].Table, cfgPath)
	if u := vals.RegistryURL(); u != "" {
		fmt.Fprintf(o.Out, "demo: %s values behind the Confluent header, schema registry at %s (it stops with the demo)\n", vals.Format, u)
	}
	fmt.Fprintf(o.Out, "demo: metrics at http://127.0.0.1:{%d,%d,%d,%d}/metrics, logs in %s; see it with: ingestor status --config %s; Ctrl-C stops in order\n",
		ports[0], ports[1], ports[2], ports[3], filepath.Join(o.Dir, "ingestor.log"), cfgPath)
	fmt.Fprintf(o.Out, "demo: look at the table it writes with: ingestor table describe|snapshots|files|head --config %s --dataset %s\n",
		cfgPath, cfg.Datasets[0].Name)

	gen, err := devenv.NewGenerator(k.Addrs(), topic)
	if err != nil {
		return err
	}
	defer gen.Close()
	gen.Rate = o.Rate
	// The bad records are JSON: in an Avro or Protobuf demo they show the
	// not_avro or not_protobuf drops.
	gen.BadEvery = 250
	if vals.Format != config.FormatJSON {
		ten, err := devenv.NewTenancy(devenv.KeysUniform, len(devenv.Tenants))
		if err != nil {
			return err
		}
		run := uint32(time.Now().Unix())
		gen.Payload = func(seq int64, at time.Time) ([]byte, []byte, error) {
			name := ten.Name(ten.Of(seq))
			v, err := vals.Append(nil, devenv.EventID(run, seq), name, seq, at)
			return []byte(name), v, err
		}
	}
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	genDone := make(chan error, 1)
	// Event numbers start from the clock, so that events of a demo run
	// after an earlier one in the same directory never share an id.
	go func() { genDone <- gen.Run(genCtx, time.Now().UnixMilli()*1000, 0) }()

	// The supervisor's own endpoint, as `ingestor run` serves it, so that
	// `ingestor status --config <dir>/ingestor.yaml` sees the roles' state.
	reg := metrics.NewRegistry(metrics.Supervisor)
	metricsCtx, stopMetrics := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMetrics()
	if _, err := metrics.Serve(metricsCtx, cfg.Metrics.Address, reg, logger); err != nil {
		return err
	}
	sup, err := supervisor.New(cfg, cfgPath, supervisor.Options{Logger: logger, Registerer: reg, Stderr: o.Log})
	if err != nil {
		return err
	}
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()

	p := newProgress(cfg, cat, o.Out)
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for {
		select {
		case err := <-supDone:
			stopGen()
			<-genDone
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			good, bad := gen.Produced()
			fmt.Fprintf(o.Out, "demo: stopped in order; produced %d good and %d bad events since start; table %s holds %d rows\n",
				good, bad, cfg.Datasets[0].Table, p.tableRows(context.Background()))
			return nil
		case <-tick.C:
			p.print(ctx, gen)
		}
	}
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
