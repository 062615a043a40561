package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
)

// pauseTimeout bounds a pause or resume request: the supervisor answers
// once it recorded the change and told the consumer, in well under a
// second.
const pauseTimeout = 30 * time.Second

// runPause is `ingestor pause`.
func runPause(args []string) int { return pauseMain("pause", args, os.Stdout, os.Stderr) }

// runResume is `ingestor resume`.
func runResume(args []string) int { return pauseMain("resume", args, os.Stdout, os.Stderr) }

// datasetFlags is a --dataset flag that may be given more than once.
type datasetFlags []string

func (d *datasetFlags) String() string { return strings.Join(*d, ",") }
func (d *datasetFlags) Set(v string) error {
	*d = append(*d, v)
	return nil
}

// pauseMain is `ingestor pause` and `ingestor resume`: a request to the
// control socket in the WAL directory, which the supervisor serves (the
// consumer in the sidecar layout).
func pauseMain(sub string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ingestor "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path of the YAML configuration `file` of the running ingestor")
	var datasets datasetFlags
	fs.Var(&datasets, "dataset", "the dataset to "+sub+" (repeatable); all of them when absent")
	var reason *string
	usage := "usage: ingestor resume --config FILE [--dataset NAME]..."
	if sub == "pause" {
		reason = fs.String("reason", "", "why, shown by `ingestor status` beside who paused and since when")
		usage = "usage: ingestor pause --config FILE [--dataset NAME]... [--reason TEXT]"
	}
	if err := fs.Parse(args); err != nil {
		return flagsExit(err) // the flag package printed why
	}
	if *path == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	abs, err := filepath.Abs(*path)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor %s: config path %s: %v\n", sub, *path, err)
		return exitUsage
	}
	cfg, err := config.Load(abs)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor %s: invalid configuration:\n%v\n", sub, err)
		return exitUsage
	}
	names := datasetNames(cfg)
	for _, d := range datasets {
		// A resume may clear a dataset the configuration lost; the
		// server knows the record.
		if sub == "pause" && !slices.Contains(names, d) {
			fmt.Fprintf(stderr, "ingestor %s: unknown dataset %q: the configured datasets are %s\n", sub, d, strings.Join(names, ", "))
			return exitUsage
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	client := pause.NewClient(cfg.Ingestion.WAL.Dir)
	var a pause.Answer
	if sub == "pause" {
		a, err = client.Pause(ctx, datasets, *reason)
	} else {
		a, err = client.Resume(ctx, datasets)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ingestor %s: %v\n", sub, err)
		var re *pause.RequestError
		if errors.As(err, &re) {
			return exitUsage
		}
		return exitError
	}
	printAnswer(stdout, sub, a)
	return 0
}

// printAnswer tells what changed and what is paused now.
func printAnswer(w io.Writer, sub string, a pause.Answer) {
	verb := map[string]string{"pause": "paused", "resume": "resumed"}[sub]
	if len(a.Changed) == 0 {
		fmt.Fprintf(w, "nothing to do: no dataset named was %s\n", map[string]string{"pause": "running", "resume": "paused"}[sub])
	} else {
		fmt.Fprintf(w, "%s %s\n", verb, strings.Join(a.Changed, ", "))
	}
	if a.Applied {
		fmt.Fprintln(w, "the consumer applied it")
	} else {
		fmt.Fprintf(w, "recorded, not applied yet: %s\n", a.Note)
	}
	if len(a.Paused) == 0 {
		fmt.Fprintln(w, "no dataset is paused by an operator")
	}
	for _, n := range slices.Sorted(maps.Keys(a.Paused)) {
		e := a.Paused[n]
		why := e.Reason
		if why == "" {
			why = "no reason given"
		}
		fmt.Fprintf(w, "%s: paused by %s since %s (%s)\n", n, e.By, e.Since.UTC().Format(time.RFC3339), why)
	}
	if sub == "resume" && len(a.Changed) > 0 {
		fmt.Fprintln(w, "a pause for a full WAL volume, if any, holds until the volume drains")
	}
}
