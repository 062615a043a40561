package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/icewal/ingestor/internal/status"
	"github.com/icewal/ingestor/shared/config"
)

// runStatus is `ingestor status`: what the running ingestor does, read
// from its processes' endpoints and its WAL directory.
func runStatus(args []string) int {
	fs := flag.NewFlagSet("ingestor status", flag.ContinueOnError)
	path := fs.String("config", "", "path of the YAML configuration `file` of the ingestor to look at")
	output := fs.String("output", status.FormatText, "output `format`: text or json")
	watch := fs.Bool("watch", false, "redraw every --every until Ctrl-C, like top")
	every := fs.Duration("every", 2*time.Second, "time between two redraws with --watch")
	if err := fs.Parse(args); err != nil {
		return flagsExit(err) // the flag package printed why
	}
	if *path == "" || fs.NArg() > 0 || (*output != status.FormatText && *output != status.FormatJSON) || *every <= 0 {
		fmt.Fprintln(os.Stderr, "usage: ingestor status --config FILE [--output text|json] [--watch [--every 2s]]")
		return exitUsage
	}
	abs, err := filepath.Abs(*path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingestor status: config path %s: %v\n", *path, err)
		return exitUsage
	}
	cfg, err := config.Load(abs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingestor status: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c := status.NewCollector(cfg, status.Options{ConfigPath: abs})
	if *watch {
		err = status.Watch(ctx, os.Stdout, c, *output, *every)
	} else {
		err = status.Show(ctx, os.Stdout, c, *output)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "ingestor status:", c.Redactor().String(err.Error()))
		return exitError
	}
	return 0
}
