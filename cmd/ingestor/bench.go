package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/icewal/ingestor/internal/bench"
)

// runBench is `ingestor bench`, what `make bench` runs: the whole record
// path against a local broker and Azurite, scored; the last line of its
// output is the result as one JSON object.
func runBench(args []string) int {
	o := bench.DefaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.Shape, "shape", o.Shape, "event shape: narrow (~600 B, 15 columns) or wide (~2 KB, 200 sparse columns)")
	fs.StringVar(&o.Format, "format", "json", "value format: json, avro or protobuf (Avro binary, or a Protobuf message after its message indexes, behind the Confluent header, the schema in a registry the bench starts, every column by name)")
	fs.StringVar(&o.Keys, "keys", o.Keys, "tenant distribution of the keys: uniform or skewed (Zipf, first tenant ~25 %)")
	fs.Int64Var(&o.Events, "events", o.Events, "events to produce")
	fs.IntVar(&o.Rate, "rate", o.Rate, "events per second (0: as fast as possible)")
	fs.IntVar(&o.Tenants, "tenants", o.Tenants, "number of tenants")
	partitions := fs.Int("partitions", int(o.Partitions), "partitions of the Kafka topic")
	fs.StringVar(&o.KafkaKey, "kafka-key", o.KafkaKey, "record key: tenant (a tenant stays in one partition) or event (every tenant in every partition)")
	fs.StringVar(&o.Storage, "storage", o.Storage, "where the table's files go: azurite (an Azurite the bench starts) or file (a directory of the run; for soaks, where the emulator's cost per request, which grows with the objects it holds, would be measured instead of the ingestor's)")
	fs.Float64Var(&o.MaxFileAgeMinutes, "max-file-age-minutes", o.MaxFileAgeMinutes, "ingestion.wal.maxFileAgeMinutes")
	fs.Float64Var(&o.CommitIntervalSeconds, "commit-interval-seconds", o.CommitIntervalSeconds, "ingestion.commitIntervalSeconds")
	fs.Int64Var(&o.MaxFileSizeBytes, "max-file-size-bytes", o.MaxFileSizeBytes, "ingestion.wal.maxFileSizeBytes (0: the default)")
	fs.StringVar(&o.Out, "out", o.Out, "keep the run's files and result.json in this directory (default: a temporary one, removed)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "limit of the whole run")
	soak := bench.SoakOptions()
	fs.IntVar(&o.SoakCommits, "soak-commits", 0, fmt.Sprintf("soak run: produce until the committer made this many commits, and print the table's health at checkpoints; "+
		"unless given, its rate is %d, tenants %d, partitions %d, commit interval %gs, file age %g min, timeout %s",
		soak.Rate, soak.Tenants, soak.Partitions, soak.CommitIntervalSeconds, soak.MaxFileAgeMinutes, soak.Timeout))
	fs.IntVar(&o.SoakCheckpoints, "soak-checkpoints", soak.SoakCheckpoints, "soak run: checkpoints besides the one at the end")
	fs.Float64Var(&o.Upserts, "upserts", 0, "upsert run: this share of the events (for example 0.3) update the key of an earlier event and a tenth of those delete it; "+
		"the dataset keeps one row per key (the event id, also the Kafka key) and the table is scored against the last-write-wins state of what was produced")
	fs.BoolVar(&o.UpsertTombstones, "upsert-tombstones", o.UpsertTombstones, "upsert run: send every other delete as a Kafka tombstone (a key and a null value) instead of a value whose op is d (false: every delete by op)")
	fs.BoolVar(&o.ForeignTable, "foreign-table", false, "create the table as another engine would, keeping old metadata.json versions (write.metadata.delete-after-commit.enabled false, write.metadata.previous-versions-max 100)")
	maintenance := fs.Bool("maintenance", true, "write maintenance.enabled into the configuration (only when given)")
	fs.Float64Var(&o.MaintenanceIntervalSeconds, "maintenance-interval-seconds", 0, fmt.Sprintf("maintenance.intervalSeconds, written with --maintenance=true (soak run: %gs unless given)", soak.MaintenanceIntervalSeconds))
	fs.Float64Var(&o.IdleCompactionMinutes, "idle-compaction-minutes", 0, fmt.Sprintf("maintenance.idleCompactionMinutes, written with --maintenance=true (soak run: %g min unless given)", soak.IdleCompactionMinutes))
	if err := fs.Parse(args); err != nil {
		return flagsExit(err) // the flag package printed why
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["maintenance"] {
		o.Maintenance = maintenance
	}
	if o.SoakCommits > 0 {
		// The soak run's own defaults, where a flag does not say otherwise.
		for name, apply := range map[string]func(){
			"rate":                         func() { o.Rate = soak.Rate },
			"tenants":                      func() { o.Tenants = soak.Tenants },
			"partitions":                   func() { *partitions = int(soak.Partitions) },
			"commit-interval-seconds":      func() { o.CommitIntervalSeconds = soak.CommitIntervalSeconds },
			"max-file-age-minutes":         func() { o.MaxFileAgeMinutes = soak.MaxFileAgeMinutes },
			"timeout":                      func() { o.Timeout = soak.Timeout },
			"maintenance-interval-seconds": func() { o.MaintenanceIntervalSeconds = soak.MaintenanceIntervalSeconds },
			"idle-compaction-minutes":      func() { o.IdleCompactionMinutes = soak.IdleCompactionMinutes },
		} {
			if !set[name] {
				apply()
			}
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ingestor bench [flags]; see ingestor bench -help")
		return exitUsage
	}
	if o.Upserts != 0 && set["kafka-key"] && o.KafkaKey != bench.KeyEvent {
		fmt.Fprintln(os.Stderr, "bench: --upserts keys the records by the row key, the event id: all versions of a key must be in one Kafka partition; leave out --kafka-key")
		return exitUsage
	}
	o.Partitions = int32(*partitions)
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return exitError
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return exitError
	}
	fmt.Fprintln(os.Stdout, string(line))
	if u := res.Upserts; u != nil {
		fmt.Fprintf(os.Stderr, "bench: %.0f rows per CPU-second; upserts: %d updates, %d deletes (%d tombstones); live keys expected %d, found %d\n",
			res.RowsPerCPUSec, u.Updates, u.Deletes, u.Tombstones, u.LiveKeysExpected, u.LiveKeysFound)
		if !u.LastWriteWins {
			fmt.Fprintf(os.Stderr, "bench: NOT the last-write-wins state: %d live keys missing, %d rows of keys that should have none, %d keys shown more than once, %d stale versions, %d with the wrong tenant, %d keys split over partitions\n",
				u.Missing, u.Extra, u.Duplicated, u.Stale, u.WrongTenant, u.SplitKeys)
			return exitError
		}
		return 0
	}
	if !res.ExactlyOnce {
		fmt.Fprintf(os.Stderr, "bench: NOT exactly once: %d missing, %d duplicated, %d unexpected, %d with the wrong tenant\n",
			res.Missing, res.Duplicated, res.Unexpected, res.WrongTenant)
		return exitError
	}
	return 0
}
