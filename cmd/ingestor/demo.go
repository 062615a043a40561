package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/icewal/ingestor/internal/demo"
)

// runDemo is `ingestor demo`, what `make run` starts.
func runDemo(args []string) int {
	o := demo.DefaultOptions()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.Dir, "dir", o.Dir, "directory of the broker's data, the catalog, the warehouse, the WAL and the logs")
	fs.IntVar(&o.KafkaPort, "kafka-port", o.KafkaPort, "port of the local broker (a free one if taken)")
	fs.IntVar(&o.Rate, "rate", o.Rate, "events generated per second")
	fs.DurationVar(&o.Every, "every", o.Every, "time between two progress lines")
	fs.StringVar(&o.Format, "format", o.Format, "value format: json (click events), avro or protobuf (the bench's narrow events behind the Confluent header, the schema in a registry the demo starts, every column by name)")
	duration := fs.Duration("duration", 0, "stop in order after this long (0: at Ctrl-C)")
	if err := fs.Parse(args); err != nil {
		return flagsExit(err) // the flag package printed why
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	go func() {
		// A second Ctrl-C exits at once; the next start's recovery
		// finishes the work.
		<-ctx.Done()
		stop()
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		<-c
		os.Exit(exitError)
	}()
	start := time.Now()
	if err := demo.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return exitError
	}
	fmt.Fprintf(os.Stdout, "demo: ran %s\n", time.Since(start).Round(time.Second))
	return 0
}
