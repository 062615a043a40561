// Package avrodec is step 2 of the record path for Avro datasets: it
// turns one Kafka record's Avro binary value (the Confluent header already
// stripped by the caller) into a decode.Row, one value per top-level
// column of the table, as package decode does for JSON. Errors are
// *decode.Error with the same bounded reasons, ReasonNotAvro for bytes
// that are not a value of the writer schema.
//
// # Compiled once, read in one pass
//
// New compiles the writer schema and the mapping into a program: one op
// per field of the writer's record, in the order Avro writes them, that
// either stores a value at its column or reads past the field. Records
// whose fields are addressed by a path (a.b.c) are inlined into their
// parent's program, since Avro writes no framing around a record; a
// nullable record becomes a union op whose null branch leaves its
// columns null. Skipped strings and bytes are jumped over by their
// length, blocks of arrays and maps by their byte size when the writer
// gave it. Nothing is built for a field no column needs.
//
// # Values alias the payload
//
// Strings and binary values in a row point into the payload, so a row
// must be consumed before its payload is reused. The consumer's segment
// copies each value (its row buffer encodes them into chunks of its own,
// its Arrow builders copy them) before the next record is decoded, and
// keeps no payload after that. Structs, lists and maps are new slices in
// each row, and a row's values are boxed in slots of a pooled arena that
// are written once and never reused (box.go), so the Decoder keeps no
// state between records and a row stays valid as long as its payload
// does.
//
// # Crash safety
//
// Decoding has no state beyond the compiled program, so a crash anywhere
// in it loses nothing: the record's offset is not committed until its row
// is in a ready_* file, and Kafka delivers it again.
//
// The files, one concept each:
//
//	schema.go        Parse: the writer schema, named types resolved
//	table.go         TableSchema: Iceberg columns from a writer schema
//	compile.go       New: the program of ops over the writer's fields
//	compilevalue.go  which writer type becomes which column type, and how
//	decode.go        DecodeInto, the program's run, the values of ops
//	read.go          reading varints, bytes and blocks; skipping any type
//	value.go         decimals, UUIDs, structs, lists and maps
//	box.go           the arenas rows' values are boxed in, an
//	                 allocation per few rows instead of one per value
package avrodec
