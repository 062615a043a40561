package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envMain makes the test binary run dispatch on its arguments after "--".
const envMain = "INGESTOR_MAIN_TEST"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) != "" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(dispatch(args, os.Stderr))
	}
	os.Exit(m.Run())
}

// ingestor runs the command line in a process of its own and returns its
// exit code and stderr.
func ingestor(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), envMain+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// everySubcommand is what the list of subcommands must show: each name
// with its line.
var everySubcommand = []string{
	"usage: ingestor <subcommand>",
	"  bench ", "  bloom ", "  committer ", "  consumer ", "  demo ", "  run ",
	"  maintainer ", "  pause ", "  resume ", "  status ", "  table ", "  uploader ", "  version ", "  wal ",
	"the supervisor: runs the consumer, uploader, committer and maintainer",
	"'ingestor <subcommand> --help'",
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("ingestion:\n  wal:\n    dir: /tmp\n  bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	incomplete := filepath.Join(dir, "incomplete.yaml")
	if err := os.WriteFile(incomplete, []byte("ingestion:\n  wal:\n    dir: /tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string
	}{
		{name: "no subcommand", args: nil, wantCode: 2, wantErr: everySubcommand},
		{name: "--help", args: []string{"--help"}, wantCode: 0, wantErr: everySubcommand},
		{name: "-h", args: []string{"-h"}, wantCode: 0, wantErr: everySubcommand},
		{name: "help", args: []string{"help"}, wantCode: 0, wantErr: everySubcommand},
		{name: "help of a subcommand", args: []string{"help", "status"}, wantCode: 0, wantErr: []string{"Usage of ingestor status:", "-watch"}},
		{name: "status --help", args: []string{"status", "--help"}, wantCode: 0, wantErr: []string{"Usage of ingestor status:", "-output format"}},
		{name: "run --help", args: []string{"run", "--help"}, wantCode: 0, wantErr: []string{"Usage of ingestor run:", "-config file"}},
		{name: "consumer -h", args: []string{"consumer", "-h"}, wantCode: 0, wantErr: []string{"Usage of ingestor consumer:", "-config file"}},
		{name: "wal ls --help", args: []string{"wal", "ls", "--help"}, wantCode: 0, wantErr: []string{"-dir directory"}},
		{name: "bloom test --help", args: []string{"bloom", "test", "--help"}, wantCode: 0, wantErr: []string{"-column column"}},
		{name: "bench --help", args: []string{"bench", "--help"}, wantCode: 0, wantErr: []string{"-events"}},
		{name: "demo --help", args: []string{"demo", "--help"}, wantCode: 0, wantErr: []string{"-rate"}},
		{name: "version --help", args: []string{"version", "--help"}, wantCode: 0, wantErr: []string{"-output format"}},
		{name: "unknown subcommand", args: []string{"janitor"}, wantCode: 2, wantErr: []string{`unknown subcommand "janitor"`, "run 'ingestor help'"}},
		{name: "unknown flag of status", args: []string{"status", "--nope"}, wantCode: 2, wantErr: []string{"flag provided but not defined: -nope", "Usage of ingestor status:"}},
		{name: "missing config flag", args: []string{"consumer"}, wantCode: 2, wantErr: []string{"usage: ingestor consumer --config FILE"}},
		{name: "unknown flag", args: []string{"run", "--nope"}, wantCode: 2, wantErr: []string{"flag provided but not defined: -nope"}},
		{name: "missing config file", args: []string{"uploader", "--config", filepath.Join(dir, "none.yaml")}, wantCode: 2, wantErr: []string{"ingestor uploader: invalid configuration", "none.yaml"}},
		{
			name: "unknown key", args: []string{"run", "--config", bad}, wantCode: 2,
			wantErr: []string{"ingestor run: invalid configuration", "ingestion.bogus: unknown key"},
		},
		{
			name: "incomplete config", args: []string{"committer", "--config", incomplete}, wantCode: 2,
			wantErr: []string{"ingestor committer: invalid configuration", "kafka.brokers: required", "catalog.name: required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := ingestor(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := versionMain([]string{"--output", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("version --output json: exit %d: %s", code, errOut.String())
	}
	var v buildVersion
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	if v.Version == "" || v.Commit == "" || !strings.HasPrefix(v.GoVersion, "go") {
		t.Errorf("version = %+v, want a version, a commit and the Go version", v)
	}
	// The test binary is built with the module's dependencies, so their
	// versions are those go.mod requires.
	for lib, want := range map[string]string{
		"github.com/apache/iceberg-go":   "v0.7.0",
		"github.com/twmb/franz-go":       "v1.22.3",
		"github.com/apache/arrow-go/v18": "v18.8.0",
	} {
		if got := v.Libraries[lib]; got != want {
			t.Errorf("library %s = %q, want %q", lib, got, want)
		}
	}

	out.Reset()
	if code := versionMain(nil, &out, &errOut); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"ingestor ", "commit ", "go           go1.", "iceberg-go   v0.7.0", "franz-go     v1.22.3", "arrow-go/v18 v18.8.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
	if code := versionMain([]string{"--output", "yaml"}, &out, &errOut); code != exitUsage {
		t.Errorf("version --output yaml: exit %d, want %d", code, exitUsage)
	}
}
