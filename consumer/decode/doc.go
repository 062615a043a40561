// Package decode is step 2 of the record path: it turns one Kafka record's
// JSON payload into a Row, one value per top-level column of the table, by
// the dataset's customMapping (column -> JMESPath expression). The
// consumer appends the Row to a WAL segment; a payload that does not
// decode is an *Error whose Reason labels the drop metric, and nothing of
// it reaches the WAL.
//
// Decoding has no state beyond the compiled mapping, so a crash anywhere
// in it loses nothing: the record's offset is not committed until its row
// is in a ready_* file, and Kafka delivers it again.
//
// The files, one concept each:
//
//	decoder.go  Decoder: compiling the mapping, DecodeInto, Convert
//	row.go      Row and MapValue, the values a Decoder produces
//	error.go    Error and the bounded drop reasons
//	reader.go   the JSON reader, which accepts exactly what encoding/json
//	            accepts; one walker for objects and arrays
//	path.go     plain paths (a.b[0]) recognised and evaluated without
//	            go-jmespath
//	trie.go     the trie of plain paths, which lets the reader build only
//	            the selected values in one pass
//	keytable.go the frozen hash table of a trie node's keys, which the
//	            reader looks every object key up in
//	convert.go  conversion of a JSON value to each Iceberg type
//	box.go      the cells the converted scalars of a visit are boxed in,
//	            an allocation per chunk instead of per value
//	number.go   exact number parsing: integers, floats, decimals
//	time.go     dates, times of day and RFC 3339 timestamps
//	render.go   the offending value, shortened, in error messages
//
// The Arrow builders that take Rows are the consumer's (consumer/append.go
// and rowbuilder.go).
package decode
