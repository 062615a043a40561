package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// statusCommand runs `ingestor status` with args in a process of its own.
func statusCommand(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "status"}, args...)...)
	cmd.Env = append(os.Environ(), envMain+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run status %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestStatusCommand(t *testing.T) {
	dir := t.TempDir()
	// Nothing listens at these ports: every process shows down.
	var ports []int
	for range 4 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	const secret = "status-cmd-planted-0c7e"
	cfg := filepath.Join(dir, "ingestor.yaml")
	doc := fmt.Sprintf(`ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:1"]}
catalog: {name: c, type: sql, uri: "file:%s/c.db", sql.driver: sqlite, token: %q}
metrics:
  address: "127.0.0.1:%d"
  roles: {consumer: "127.0.0.1:%d", uploader: "127.0.0.1:%d", committer: "127.0.0.1:%d"}
datasets:
  - {name: clicks, topic: clicks, table: web.clicks, customMapping: {id: id}}
`, filepath.Join(dir, "wal"), dir, secret, ports[0], ports[1], ports[2], ports[3])
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{name: "no config", args: nil, wantCode: 2, wantStderr: []string{"usage: ingestor status --config FILE"}},
		{name: "bad output", args: []string{"--config", cfg, "--output", "yaml"}, wantCode: 2, wantStderr: []string{"--output text|json"}},
		{name: "bad interval", args: []string{"--config", cfg, "--watch", "--every", "0s"}, wantCode: 2, wantStderr: []string{"usage:"}},
		{name: "missing config file", args: []string{"--config", filepath.Join(dir, "none.yaml")}, wantCode: 2, wantStderr: []string{"invalid configuration"}},
		{
			name: "text, all down", args: []string{"--config", cfg}, wantCode: 0,
			wantOut: []string{"consumer    down", "committer is down: connection refused", "DATASET clicks", "consumption ? (consumer down)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := statusCommand(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("output holds the planted secret:\n%s%s", stdout, stderr)
			}
		})
	}

	code, stdout, stderr := statusCommand(t, "--config", cfg, "--output", "json")
	if code != 0 {
		t.Fatalf("json: exit %d\n%s", code, stderr)
	}
	var r struct {
		Processes []struct{ Name, State string }
		Datasets  []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("json output: %v\n%s", err, stdout)
	}
	// The supervisor, the three roles of the record path and the
	// maintainer (maintenance.enabled defaults to true).
	if len(r.Processes) != 5 || len(r.Datasets) != 1 || r.Datasets[0].Name != "clicks" {
		t.Errorf("json report = %+v", r)
	}
	for _, p := range r.Processes {
		if p.State != "down" {
			t.Errorf("%s is %s, want down", p.Name, p.State)
		}
	}
}
