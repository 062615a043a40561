// Package config loads the one YAML file that every role of the ingestor
// reads: the consumer, the uploader, the committer and the supervisor.
//
// Loading is strict. An unknown key, a value of the wrong type or a missing
// required key is rejected with the key's full path (for example
// "datasets[0].customMapping.ts") and the problem, so that a mistake is
// found at start and not hours later in the record path. Defaults are the
// ones the product specification names.
package config
