package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/icewal/ingestor/internal/tableview"
)

// runTable is `ingestor table describe|snapshots|files|head`.
func runTable(args []string) int { return tableMain(args, os.Stdout, os.Stderr) }

const tableUsage = `usage:
  ingestor table describe  --config FILE --dataset NAME [--output text|json]
  ingestor table snapshots --config FILE --dataset NAME [--output text|json]
  ingestor table files     --config FILE --dataset NAME [--partition NAME=VALUE,...] [--output text|json]
  ingestor table head      --config FILE --dataset NAME [--limit N] [--output text|json]
describe: schema with field ids, partition spec, sort order, properties,
  snapshot count, data files and bytes, the last commit and who made it.
snapshots: each snapshot kept, with the ingestor's summary fields.
files: the current snapshot's data files (path, partition, rows, bytes).
head: the first rows, read with iceberg-go's scan.
The --dataset flag may be left out when the configuration has one dataset.
`

func tableMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tableUsage)
		return exitUsage
	}
	sub := args[0]
	switch sub {
	case "describe", "snapshots", "files", "head":
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stderr, tableUsage) // like the flag package's usage, on stderr
		return 0
	default:
		fmt.Fprintf(stderr, "ingestor table: unknown command %q; run 'ingestor table --help'\n%s", sub, tableUsage)
		return exitUsage
	}
	name := "table " + sub
	fs := toolFlags(name, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of ingestor %s:\n", name)
		fs.PrintDefaults()
	}
	cfgPath := fs.String("config", "", "configuration `file` whose catalog holds the table")
	dataset := fs.String("dataset", "", "`name` of the dataset whose table to show")
	output := fs.String("output", tableview.FormatText, "output `format`: text or json")
	var partition *string
	var limit *int64
	switch sub {
	case "files":
		partition = fs.String("partition", "", "only files of this `partition`: name=value pairs separated by commas")
	case "head":
		limit = fs.Int64("limit", 10, "the number of `rows` to show")
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if code := flagsExit(err); code != 0 {
			fmt.Fprintf(stderr, "run 'ingestor table --help' for every table command\n")
			return code
		}
		return 0
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "ingestor %s: unexpected argument %q; run 'ingestor table --help'\n", name, pos[0])
		return exitUsage
	}
	if *cfgPath == "" {
		fmt.Fprintf(stderr, "ingestor %s: --config is required; run 'ingestor table --help'\n", name)
		return exitUsage
	}
	if err := tableview.CheckFormat(*output); err != nil {
		fmt.Fprintf(stderr, "ingestor %s: --output: %v\n", name, err)
		return exitUsage
	}
	if limit != nil && *limit <= 0 {
		fmt.Fprintf(stderr, "ingestor %s: --limit %d: want a positive number of rows\n", name, *limit)
		return exitUsage
	}
	var filter map[string]string
	if partition != nil && *partition != "" {
		if filter, err = tableview.ParsePartition(*partition); err != nil {
			fmt.Fprintf(stderr, "ingestor %s: --partition: %v\n", name, err)
			return exitUsage
		}
	}
	cfg, code := loadToolConfig(name, *cfgPath, stderr)
	if cfg == nil {
		return code
	}
	if *dataset == "" {
		if len(cfg.Datasets) != 1 {
			fmt.Fprintf(stderr, "ingestor %s: --dataset is required: the configuration has %d datasets\n", name, len(cfg.Datasets))
			return exitUsage
		}
		*dataset = cfg.Datasets[0].Name
	}
	if _, ok := cfg.Dataset(*dataset); !ok {
		fmt.Fprintf(stderr, "ingestor %s: no dataset %q in %s\n", name, *dataset, *cfgPath)
		return exitUsage
	}
	ctx, cancel := toolContext()
	defer cancel()
	v, err := tableview.Open(ctx, cfg, *dataset)
	if err != nil {
		fmt.Fprintf(stderr, "ingestor %s: %v\n", name, err)
		return exitError
	}
	defer v.Close()
	if err := tableShow(ctx, v, sub, *output, filter, limit, stdout); err != nil {
		fmt.Fprintf(stderr, "ingestor %s: %s\n", name, v.Redact(err.Error()))
		return exitError
	}
	return 0
}

// tableShow reads what sub shows and writes it.
func tableShow(ctx context.Context, v *tableview.View, sub, output string, filter map[string]string, limit *int64, stdout io.Writer) error {
	switch sub {
	case "describe":
		d, err := v.Describe(ctx)
		if err != nil {
			return err
		}
		return tableview.WriteDescription(stdout, d, output)
	case "snapshots":
		return tableview.WriteSnapshots(stdout, v.Snapshots(), output)
	case "files":
		files, err := v.Files(ctx, filter)
		if err != nil {
			return err
		}
		return tableview.WriteFiles(stdout, files, v.PartitionNames(), output)
	default:
		rows, err := v.Head(ctx, *limit)
		if err != nil {
			return err
		}
		return tableview.WriteRows(stdout, rows, output)
	}
}
