// Package shapeenc writes the events of the development shapes
// (internal/devenv) in the binary formats the consumer reads (Avro, Protobuf): each event
// is the shape's JSON event mapped to its columns by the consumer's JSON
// decoder, then encoded, so that the same seq gives the same values in
// every format. It lives apart from devenv because it needs the decoder,
// whose own tests use devenv's shapes.
package shapeenc
