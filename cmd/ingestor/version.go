package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; without it the module version from
// the build info is used ("(devel)" for a build from a checkout).
var version = ""

// commit is the source's commit, set at build time with
// -ldflags "-X main.commit=SHA" (as `make build` does) when Go's vcs stamp
// is not there.
var commit = ""

// libraries are the modules whose versions `ingestor version` reports:
// those that decide what reaches Kafka, the files and the table.
var libraries = []string{
	"github.com/apache/iceberg-go",
	"github.com/twmb/franz-go",
	"github.com/apache/arrow-go/v18",
}

// buildVersion is what `ingestor version` prints.
type buildVersion struct {
	Version   string            `json:"version"`
	Commit    string            `json:"commit"`
	Modified  bool              `json:"modified,omitempty"`
	GoVersion string            `json:"go_version"`
	Libraries map[string]string `json:"libraries"`
}

// readBuildVersion reads the version from the binary's build info: the
// commit from the vcs settings Go records when it builds from a checkout.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: version, Commit: "unknown", GoVersion: runtime.Version(), Libraries: map[string]string{}}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "" {
		v.Version = info.Main.Version
	}
	if commit != "" {
		v.Commit = commit
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				v.Commit = s.Value
			}
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, d := range info.Deps {
		for _, lib := range libraries {
			if d.Path == lib {
				if d.Replace != nil {
					d = d.Replace
				}
				v.Libraries[lib] = d.Version
			}
		}
	}
	return v
}

// runVersion is `ingestor version [--output text|json]`.
func runVersion(args []string) int { return versionMain(args, os.Stdout, os.Stderr) }

func versionMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ingestor version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", "text", "output `format`: text or json")
	if err := fs.Parse(args); err != nil {
		return flagsExit(err)
	}
	if fs.NArg() > 0 || (*output != "text" && *output != "json") {
		fmt.Fprintln(stderr, "usage: ingestor version [--output text|json]")
		return exitUsage
	}
	v := readBuildVersion()
	if *output == "json" {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "ingestor version:", err)
			return exitError
		}
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	shown := v.Commit
	if v.Modified {
		shown += " (modified)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ingestor     %s\ncommit       %s\ngo           %s\n", v.Version, shown, v.GoVersion)
	for _, lib := range libraries {
		name := lib[strings.LastIndex(strings.TrimSuffix(lib, "/v18"), "/")+1:]
		ver := v.Libraries[lib]
		if ver == "" {
			ver = "unknown"
		}
		fmt.Fprintf(&b, "%-12s %s\n", name, ver)
	}
	fmt.Fprint(stdout, b.String())
	return 0
}
