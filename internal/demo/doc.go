// Package demo is `make run`: the whole record path on the embedded
// default, with nothing to install. It starts a Kafka-protocol broker
// (franz-go's kfake) on loopback, a generator of realistic JSON click
// events with a few bad records among them, a SQLite catalog and a local
// file warehouse, creates the demo table when it is missing, runs the
// supervisor with its three roles, and prints a progress line every few
// seconds until Ctrl-C, when the supervisor drains in order. With
// --format avro or protobuf (`make run FORMAT=avro`) it also starts a
// schema registry on loopback and produces the bench's narrow events in
// that format (internal/wirevalues) to a topic and table of their own.
package demo
