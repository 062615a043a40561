// Package e2e runs the built ingestor binary against real parts, a kfake
// Kafka-protocol broker, Azurite and a SQLite or PostgreSQL catalog, and
// checks what a user checks: every good event lands in the table exactly
// once, in the right partition with the right values, bad events are
// counted by reason, and an orderly stop leaves nothing in the WAL.
package e2e
