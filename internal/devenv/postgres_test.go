//go:build linux

package devenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgresStopStart(t *testing.T) {
	ctx := context.Background()
	pg, err := StartPostgres(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Cleanup(func() { pg.Stop() })

	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("connect %s: %v", pg.DSN(), err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != PostgresDatabase {
		t.Fatalf("current_database() = %q, %v; want %s", db, err, PostgresDatabase)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the outage')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	port := pg.Port()
	if err := pg.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = pgx.Connect(cctx, pg.DSN())
	cancel()
	if err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := pg.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatalf("Start again: %v", err)
	}
	if pg.Port() != port {
		t.Fatalf("port changed from %d to %d", port, pg.Port())
	}
	if err := pg.Start(ctx); err == nil {
		t.Fatal("Start of a running server succeeded")
	}
	conn, err = pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "before the outage" {
		t.Fatalf("row after restart = %q, %v", v, err)
	}
}

func TestPostgresMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findPostgresBinaries(filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("findPostgresBinaries with nothing installed: %v, want an error saying to run make deps", err)
	}
	// A version directory without the server binary does not count.
	root := t.TempDir()
	bin := filepath.Join(root, "16", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "initdb"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := findPostgresBinaries(filepath.Join(root, "*", "bin")); err == nil {
		t.Fatal("a directory without postgres was accepted")
	}
	if err := os.WriteFile(filepath.Join(bin, "postgres"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findPostgresBinaries(filepath.Join(root, "*", "bin")); err != nil || got != bin {
		t.Fatalf("findPostgresBinaries = %q, %v; want %s", got, err, bin)
	}
}
