package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/icewal/ingestor/internal/inspect"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/storage"
)

// Exit codes of `ingestor bloom test`, which answers like grep: 0 for a
// value that may be present, 1 for one that surely is not, 2 when there is
// no answer (bad arguments, unreadable or corrupt sidecar).
const (
	exitBloomMaybe = 0
	exitBloomNo    = 1
	exitBloomError = 2
)

// toolTimeout bounds a tool's catalog and storage requests.
const toolTimeout = time.Minute

// runWAL is `ingestor wal ls|inspect`.
func runWAL(args []string) int { return walMain(args, os.Stdout, os.Stderr) }

// runBloom is `ingestor bloom test`.
func runBloom(args []string) int { return bloomMain(args, os.Stdout, os.Stderr) }

const walUsage = `usage:
  ingestor wal ls (--config FILE | --dir DIR) [--output table|json]
  ingestor wal inspect FILE [--config FILE [--dataset NAME]] [--output table|json]
`

func walMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, walUsage)
		return exitUsage
	}
	switch args[0] {
	case "ls":
		return walLs(args[1:], stdout, stderr)
	case "inspect":
		return walInspect(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stderr, walUsage)
		return 0
	}
	fmt.Fprintf(stderr, "ingestor wal: unknown command %q\n%s", args[0], walUsage)
	return exitUsage
}

func walLs(args []string, stdout, stderr io.Writer) int {
	fs := toolFlags("wal ls", stderr)
	cfgPath := fs.String("config", "", "configuration `file`, whose ingestion.wal.dir is listed")
	dir := fs.String("dir", "", "WAL `directory` to list")
	output := fs.String("output", inspect.FormatTable, "output format: table or json")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagsExit(err)
	}
	if len(pos) > 0 || (*cfgPath == "") == (*dir == "") {
		fmt.Fprint(stderr, walUsage)
		return exitUsage
	}
	if *cfgPath != "" {
		cfg, code := loadToolConfig("wal ls", *cfgPath, stderr)
		if cfg == nil {
			return code
		}
		*dir = cfg.Ingestion.WAL.Dir
	}
	entries, err := inspect.List(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor wal ls: %v\n", err)
		return exitError
	}
	if err := inspect.WriteList(stdout, entries, time.Now(), *output); err != nil {
		fmt.Fprintf(stderr, "ingestor wal ls: %v\n", err)
		return exitUsage
	}
	return 0
}

func walInspect(args []string, stdout, stderr io.Writer) int {
	fs := toolFlags("wal inspect", stderr)
	cfgPath := fs.String("config", "", "configuration `file`: decode the partition values with the table's spec")
	dataset := fs.String("dataset", "", "dataset of the file (default: the one that reads the topic in its name); needs --config")
	output := fs.String("output", inspect.FormatTable, "output format: table or json")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagsExit(err)
	}
	if len(pos) != 1 || (*dataset != "" && *cfgPath == "") {
		fmt.Fprint(stderr, walUsage)
		return exitUsage
	}
	if *output != inspect.FormatTable && *output != inspect.FormatJSON {
		fmt.Fprintf(stderr, "ingestor wal inspect: unknown output format %q: want table or json\n", *output)
		return exitUsage
	}
	seg, err := inspect.ReadSegment(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "ingestor wal inspect: %v\n", err)
		return exitError
	}
	// A file whose partition values do not decode with the table's spec
	// is still printed (its values as the footer holds them) before the
	// error, which is the one the committer would meet.
	var specErr error
	if *cfgPath != "" {
		cfg, code := loadToolConfig("wal inspect", *cfgPath, stderr)
		if cfg == nil {
			return code
		}
		specErr = decodeWithTable(cfg, seg, *dataset)
	}
	if err := inspect.WriteSegment(stdout, seg, *output); err != nil {
		fmt.Fprintf(stderr, "ingestor wal inspect: %v\n", err)
		return exitError
	}
	if specErr != nil {
		fmt.Fprintf(stderr, "ingestor wal inspect: %v\n", specErr)
		return exitError
	}
	return 0
}

// decodeWithTable decodes seg's partition values with the partition spec
// of its dataset's table.
func decodeWithTable(cfg *config.Config, seg *inspect.Segment, dataset string) error {
	d, err := inspect.DatasetFor(cfg, seg, dataset)
	if err != nil {
		return err
	}
	ctx, cancel := toolContext()
	defer cancel()
	spec, schema, err := inspect.TableSpec(ctx, cfg, d)
	if err == nil {
		err = seg.DecodeWithSpec(spec, schema)
	}
	if err != nil {
		return fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	return nil
}

const bloomUsage = `usage:
  ingestor bloom test --file F --column C --value V [--type T] [--config FILE]
F is the sidecar, or the data file <uuid>.parquet beside it: a local path,
or a location (file://, abfs://...) read with the catalog properties of
--config. Prints "maybe" (exit 0) or "no" (exit 1); exit 2 on errors.
`

func bloomMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "test" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stderr, bloomUsage)
			return 0
		}
		fmt.Fprint(stderr, bloomUsage)
		return exitBloomError
	}
	fs := toolFlags("bloom test", stderr)
	file := fs.String("file", "", "the sidecar, or the data `file` beside it")
	column := fs.String("column", "", "the `column` the sidecar covers")
	value := fs.String("value", "", "the `value` to look for, as text")
	typ := fs.String("type", "string", "Iceberg `type` of the column: string, int, long, boolean, float, double, decimal(P,S), date, time, timestamp, timestamptz, uuid, binary (hex), fixed[N] (hex)")
	cfgPath := fs.String("config", "", "configuration `file` whose catalog properties (adls.*) reach the storage")
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return exitBloomError
	}
	if len(pos) > 0 || *file == "" || *column == "" || !flagSet(fs, "value") {
		fmt.Fprint(stderr, bloomUsage)
		return exitBloomError
	}
	var props map[string]string
	if *cfgPath != "" {
		cfg, _ := loadToolConfig("bloom test", *cfgPath, stderr)
		if cfg == nil {
			return exitBloomError
		}
		props = cfg.Catalog.Properties
	}
	ctx, cancel := toolContext()
	defer cancel()
	ans, err := inspect.LookupBloom(ctx, storage.Open(props), *file, *column, *typ, *value)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor bloom test: %v\n", err)
		return exitBloomError
	}
	if ans.MayContain {
		fmt.Fprintln(stdout, "maybe")
		return exitBloomMaybe
	}
	fmt.Fprintln(stdout, "no")
	return exitBloomNo
}

// toolFlags returns a flag set that reports its errors to stderr.
func toolFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("ingestor "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses flags placed before, between or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil // everything after "--" is positional
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// flagSet reports whether the flag was given, even as an empty string.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loadToolConfig loads the configuration; a failure is printed and returns
// exitUsage.
func loadToolConfig(name, path string, stderr io.Writer) (*config.Config, int) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor %s: invalid configuration:\n%v\n", name, err)
		return nil, exitUsage
	}
	return cfg, 0
}

// toolContext ends at Ctrl-C or after toolTimeout.
func toolContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	return ctx, func() { cancel(); stop() }
}
