package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableCommandLine covers what `ingestor table` answers without a
// table: help exits 0, a bad command line exits 2 with a hint, a catalog
// that cannot be read exits 1.
// e2e/table_test.go runs the commands against a table the ingestor wrote.
func TestTableCommandLine(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ingestor.yaml")
	doc := `ingestion: {wal: {dir: /tmp/wal}}
kafka: {brokers: ["127.0.0.1:9092"]}
catalog: {name: c, type: sql, uri: "file:/nonexistent/catalog.db", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file:///tmp/wh"}
datasets:
  - {name: a, topic: a, table: web.a, customMapping: {x: x}}
  - {name: b, topic: b, table: web.b, customMapping: {x: x}}
`
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string
	}{
		{"table --help", []string{"table", "--help"}, 0, []string{"ingestor table describe", "ingestor table head", "--limit N"}},
		{"help table", []string{"help", "table"}, 0, []string{"ingestor table snapshots", "ingestor table files"}},
		{"describe --help", []string{"table", "describe", "--help"}, 0, []string{"Usage of ingestor table describe:", "-config file", "-dataset name", "-output format"}},
		{"files -h", []string{"table", "files", "-h"}, 0, []string{"-partition partition"}},
		{"head --help", []string{"table", "head", "--help"}, 0, []string{"-limit rows"}},
		{"no command", []string{"table"}, 2, []string{"usage:", "ingestor table describe"}},
		{"unknown command", []string{"table", "drop"}, 2, []string{`unknown command "drop"`, "ingestor table --help"}},
		{"unknown flag", []string{"table", "describe", "--nope"}, 2, []string{"flag provided but not defined: -nope", "run 'ingestor table --help'"}},
		{"flag of another command", []string{"table", "describe", "--limit", "3"}, 2, []string{"flag provided but not defined: -limit"}},
		{"no config", []string{"table", "snapshots", "--dataset", "a"}, 2, []string{"--config is required"}},
		{"bad output", []string{"table", "describe", "--config", cfg, "--dataset", "a", "--output", "yaml"}, 2, []string{`unknown output format "yaml"`}},
		{"bad limit", []string{"table", "head", "--config", cfg, "--dataset", "a", "--limit", "0"}, 2, []string{"--limit 0: want a positive number"}},
		{"bad partition", []string{"table", "files", "--config", cfg, "--dataset", "a", "--partition", "tenant"}, 2, []string{"want name=value pairs"}},
		{"unknown dataset", []string{"table", "describe", "--config", cfg, "--dataset", "z"}, 2, []string{`no dataset "z"`}},
		{"dataset needed", []string{"table", "describe", "--config", cfg}, 2, []string{"--dataset is required: the configuration has 2 datasets"}},
		{"stray argument", []string{"table", "describe", "web.a", "--config", cfg}, 2, []string{`unexpected argument "web.a"`}},
		{"no catalog to read", []string{"table", "files", "--config", cfg, "--dataset", "a"}, 1, []string{"ingestor table files: dataset a:"}},
		{"invalid config", []string{"table", "describe", "--config", filepath.Join(t.TempDir(), "none.yaml")}, 2, []string{"invalid configuration"}},
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
