package consumer

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running: the
// consumer starts one per dataset, partition and watchdog, and every one
// must end with Run.
func TestMain(m *testing.M) {
	// The tests of unknown_schema drops take the registry's first "not
	// found" as lasting; TestRegistryConfirmsAMissingSchema sets its own.
	registryMissingAfter = 0
	goleak.VerifyTestMain(m,
		// database/sql's connection opener lives as long as the *sql.DB
		// that iceberg-go's catalog keeps in a package cache of dialects.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}
