// Package testutil holds the small helpers that the tests and benchmarks
// of several packages share, so that each is written once. Only test files
// import it.
package testutil
