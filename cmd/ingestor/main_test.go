package main

import (
	"bytes"
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
		{name: "no subcommand", args: nil, wantCode: 2, wantErr: []string{"usage:", "committer, consumer, ", "run, status, uploader"}},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantErr: []string{"usage:"}},
		{name: "unknown subcommand", args: []string{"janitor"}, wantCode: 2, wantErr: []string{`unknown subcommand "janitor"`}},
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
