//go:build linux

package testutil

import (
	"context"
	"testing"

	"github.com/icewal/ingestor/internal/devenv"
)

// Postgres starts a PostgreSQL server of its own for tb (Debian's
// binaries, see devenv.StartPostgres and `make deps`), stopped when tb
// ends. A test that stops it to simulate an outage may start it again.
func Postgres(tb testing.TB) *devenv.Postgres {
	tb.Helper()
	pg, err := devenv.StartPostgres(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatalf("start postgres: %v", err)
	}
	tb.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			tb.Errorf("stop postgres: %v", err)
		}
	})
	return pg
}
