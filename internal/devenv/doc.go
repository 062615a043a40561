// Package devenv starts the real dependencies of the record path on the
// local machine, for tests and for the local demo: a Kafka-protocol broker
// (franz-go's kfake), the Azure Blob Storage emulator Azurite (a child
// process from the npm package, installed by `make deps`) and a catalog
// database. Each listens on 127.0.0.1 on a free port and is stopped by its
// owner; none needs Docker or network access.
//
// Azurite can be stopped and started again on the same port and data
// directory, which is how tests simulate a storage outage without losing
// what was stored before it.
package devenv
