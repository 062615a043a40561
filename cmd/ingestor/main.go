// Command ingestor moves JSON events from Kafka into Iceberg tables through
// a local Parquet write-ahead log.
//
//	ingestor run --config FILE        the supervisor: runs the three roles as child processes
//	ingestor consumer --config FILE   one role alone (or as the supervisor's child)
//	ingestor uploader --config FILE
//	ingestor committer --config FILE
//	ingestor pause --config FILE [--dataset D] [--reason TEXT]
//	ingestor resume --config FILE [--dataset D]
//	ingestor help                     every subcommand, one line each
//
// This package parses flags and dispatches; the work is in the role
// packages, the supervisor and shared/.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/icewal/ingestor/shared/role"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stderr))
}

// command is one subcommand: its entry point, which gets the arguments
// after the subcommand's name and returns the exit code, and the line that
// `ingestor help` prints for it.
type command struct {
	run     func(args []string) int
	summary string
}

// commands maps each subcommand's name to it.
func commands() map[string]command {
	return map[string]command{
		"run":           {runSupervisor, "the supervisor: runs the consumer, uploader, committer and maintainer as child processes"},
		"demo":          {runDemo, "a local broker, catalog and storage with generated events: what `make run` starts"},
		role.Consumer:   {roleCommand(role.Consumer), "one role alone: Kafka to the WAL directory (or the supervisor's child)"},
		role.Uploader:   {roleCommand(role.Uploader), "one role alone: ready WAL files to the object store"},
		role.Committer:  {roleCommand(role.Committer), "one role alone: uploaded files into the Iceberg tables"},
		role.Maintainer: {roleCommand(role.Maintainer), "one role alone: table upkeep (snapshot expiry, manifest merging, compaction)"},
		"wal":           {runWAL, "list the WAL directory (wal ls) or look into one file (wal inspect)"},
		"bloom":         {runBloom, "ask a bloom sidecar whether a data file may hold a value (bloom test)"},
		"table":         {runTable, "look at a dataset's Iceberg table: describe, snapshots, files, head"},
		"status":        {runStatus, "what the running ingestor does: processes, volume, lag, uploads, commits"},
		"pause":         {runPause, "stop fetching a dataset (or all) until resumed, across restarts; Kafka keeps the events"},
		"resume":        {runResume, "lift an operator's pause of a dataset (or all); a full-volume pause stays"},
		"bench":         {runBench, "the whole record path against a local broker and Azurite, scored"},
		"version":       {runVersion, "the version, the commit, and the Go and library versions built in"},
	}
}

// dispatch runs the subcommand named by args[0].
func dispatch(args []string, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if cmd, ok := cmds[args[1]]; ok {
				return cmd.run([]string{"--help"}) // `ingestor help wal` is `ingestor wal --help`
			}
		}
		usage(stderr, cmds)
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ingestor: unknown subcommand %q; run 'ingestor help' for the list\n", args[0])
		return exitUsage
	}
	return cmd.run(args[1:])
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "usage: ingestor <subcommand> [flags]\n\nsubcommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		fmt.Fprintf(tw, "  %s\t%s\n", n, cmds[n].summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'ingestor <subcommand> --help' for its flags.\n")
}

// flagsExit is the exit code after a flag set's Parse failed, which the
// flag package has explained: 0 when the user asked for --help, else
// exitUsage.
func flagsExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return exitUsage
}
