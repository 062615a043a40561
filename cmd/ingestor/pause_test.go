package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icewal/ingestor/shared/pause"
)

// TestPauseCommand runs `ingestor pause` and `ingestor resume` against a
// control socket served as the supervisor serves it, with no consumer
// running: the request is recorded and the answer says it is not applied
// yet. The whole path, with a running ingestor, is e2e/pause_test.go.
func TestPauseCommand(t *testing.T) {
	dir := t.TempDir()
	walDir := filepath.Join(dir, "wal")
	cfg := filepath.Join(dir, "ingestor.yaml")
	doc := fmt.Sprintf(`ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:1"]}
catalog: {name: c, type: sql, uri: "file:%s/c.db", sql.driver: sqlite}
datasets:
  - {name: clicks, topic: clicks, table: web.clicks, customMapping: {id: id}}
  - {name: orders, topic: orders, table: web.orders, customMapping: {id: id}}
`, walDir, dir)
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(sub string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := pauseMain(sub, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	expect := func(what string, code, wantCode int, got string, want ...string) {
		t.Helper()
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s", what, code, wantCode, got)
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: output lacks %q:\n%s", what, w, got)
			}
		}
	}

	code, _, errOut := run("pause", "--help")
	expect("pause --help", code, 0, errOut, "Usage of ingestor pause:", "-dataset", "-reason")
	code, _, errOut = run("resume", "--help")
	expect("resume --help", code, 0, errOut, "Usage of ingestor resume:", "-dataset")
	code, _, errOut = run("pause")
	expect("pause without --config", code, exitUsage, errOut, "usage: ingestor pause --config FILE")
	code, _, errOut = run("pause", "--config", cfg, "--dataset", "payments")
	expect("pause of an unknown dataset", code, exitUsage, errOut, `unknown dataset "payments"`, "clicks, orders")
	code, _, errOut = run("pause", "--config", cfg, "--dataset", "clicks")
	expect("pause with nothing running", code, exitError, errOut, "no running ingestor serves the control socket", pause.SocketPath(walDir))

	if err := os.MkdirAll(walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctrl, err := pause.NewController(walDir, []string{"clicks", "orders"}, func() pause.Applier { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := pause.Listen(walDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- pause.Serve(ctx, l, ctrl, nil) }()
	defer func() { stop(); <-served }()

	code, out, _ := run("pause", "--config", cfg, "--dataset", "clicks", "--reason", "catalog migration")
	expect("pause clicks", code, 0, out, "paused clicks", "recorded, not applied yet: the consumer is not running", "clicks: paused by ", "(catalog migration)")
	if rec, err := pause.Read(walDir); err != nil || rec.Datasets["clicks"].Reason != "catalog migration" {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	code, _, errOut = run("resume", "--config", cfg, "--dataset", "payments")
	expect("resume of an unknown dataset", code, exitUsage, errOut, `unknown dataset "payments"`)
	code, out, _ = run("resume", "--config", cfg)
	expect("resume all", code, 0, out, "resumed clicks", "no dataset is paused by an operator", "a pause for a full WAL volume, if any, holds")
}

// TestHelpListsPauseAndResume: `ingestor help` shows both with their line.
func TestHelpListsPauseAndResume(t *testing.T) {
	code, stderr := ingestor(t, "help")
	if code != 0 || !strings.Contains(stderr, "  pause ") || !strings.Contains(stderr, "  resume ") || !strings.Contains(stderr, "until resumed, across restarts") {
		t.Fatalf("help: exit %d\n%s", code, stderr)
	}
}
