// Package protodec is the Protobuf side of step 2 of the record path: it
// turns the message of a record written in the Confluent Protobuf wire
// format (magic byte, schema id, message indexes, message) into a
// decode.Row, one value per top-level column of the table, as
// consumer/decode does for JSON. The consumer strips the magic byte and
// schema id, fetches the schema text from the registry, and uses this
// package to compile it (Compile), find the record's message
// (ReadIndexes, MessageAt), derive a table from it (TableSchema) and
// decode each record (New, Decoder.DecodeInto). A record that does not
// decode is a *decode.Error whose Reason labels the drop metric, and
// nothing of it reaches the WAL.
//
// Decoding reads the wire format directly, driven by a table from field
// number to the columns it fills, and skips unmapped fields without
// building them: no dynamic message is made per record. Like JSON
// decoding it has no state beyond the compiled plan, so a crash anywhere
// in it loses nothing: the record's offset is not committed until its row
// is in a ready_* file.
//
// The files, one concept each:
//
//	compile.go   Compile: .proto text with its references to descriptors
//	builtin.go   the confluent/ and google/type files a registry schema
//	             imports without references
//	indexes.go   the message indexes of the wire format, MessageAt
//	schema.go    TableSchema: the Iceberg columns of a message
//	decoder.go   New: the plan of which fields fill which columns
//	read.go      DecodeInto: the wire format, read by the plan
//	convert.go   conversion of one protobuf value to each Iceberg type
//	box.go       the per-row arrays that hold longs, doubles and strings,
//	             so a row's values cost a few allocations, not one each
package protodec
