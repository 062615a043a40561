// Command ingestor moves JSON events from Kafka into Iceberg tables through
// a local Parquet write-ahead log.
//
//	ingestor run --config FILE        the supervisor: runs the three roles as child processes
//	ingestor consumer --config FILE   one role alone (or as the supervisor's child)
//	ingestor uploader --config FILE
//	ingestor committer --config FILE
//
// This package parses flags and dispatches; the work is in the role
// packages, the supervisor and shared/.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/icewal/ingestor/shared/role"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stderr))
}

// commands maps each subcommand to its entry point, which gets the
// arguments after the subcommand's name and returns the exit code.
func commands() map[string]func(args []string) int {
	return map[string]func(args []string) int{
		"run":           runSupervisor,
		"demo":          runDemo,
		role.Consumer:   roleCommand(role.Consumer),
		role.Uploader:   roleCommand(role.Uploader),
		role.Committer:  roleCommand(role.Committer),
		role.Maintainer: roleCommand(role.Maintainer),
		"wal":           runWAL,
		"bloom":         runBloom,
		"status":        runStatus,
		"bench":         runBench,
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
		usage(stderr, cmds)
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ingestor: unknown subcommand %q\n", args[0])
		usage(stderr, cmds)
		return exitUsage
	}
	return cmd(args[1:])
}

func usage(w io.Writer, cmds map[string]func([]string) int) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "usage: ingestor <subcommand> --config FILE\nsubcommands: %s\n", strings.Join(names, ", "))
}
