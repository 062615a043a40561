// Package bench is `ingestor bench` and `make bench`: the benchmark of the
// whole record path on one machine, what a user compares ingestors by.
// It stands beside the record path and drives it from outside, as an
// operator would:
//
//  1. It starts a Kafka-protocol broker (kfake) in its own process, Azurite
//     as a child process, and writes a configuration with a SQLite catalog
//     and a table partitioned by tenant and hour (the columns of the
//     chosen devenv.Shape).
//  2. It starts the ingestor as its own processes, the `run` layout: the
//     binary re-executed as the supervisor, which starts the consumer, the
//     uploader and the committer as its children.
//  3. Once the consumer holds every Kafka partition, a generator in this
//     process produces the events (narrow or wide, keys uniform or skewed
//     over the tenants) as fast as it can or at a set rate. Each event
//     carries the time it was made, in the ts column.
//  4. It waits until the consumer has written every event to the WAL, then
//     until the table holds them all (rotation by age, upload, commit, as
//     in production), and stops the ingestor in order with SIGTERM.
//  5. A scorer reads the table back through the catalog and the data files
//     in Azurite and checks every event exactly once by id, and takes each
//     row's freshness: the commit time of the append that added its data
//     file (from the manifests) minus the time in its ts column; a row in
//     a file whose append the table no longer keeps (compacted, or
//     expired) has none.
//
// Meanwhile it samples /proc every 200 ms for the CPU time and the peak
// RSS (VmHWM) of the supervisor and of each child by role. The total CPU
// time is exact: the supervisor's rusage at exit includes the children it
// waited for.
//
// The result is one JSON object (Result), which the subcommand prints as
// the last line of its output. docs/benchmarks.md has the method and the
// figures.
package bench
