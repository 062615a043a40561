package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/avrodec"
	"github.com/icewal/ingestor/consumer/decode/protodec"
)

// compiled is a writer schema parsed (Avro) or compiled (Protobuf) once,
// whatever the number of table views and messages that use it.
type compiled struct {
	once sync.Once
	avro *avrodec.Schema
	fd   protoreflect.FileDescriptor
	err  error
}

// avro returns the writer schema parsed as Avro.
func (s *writerSchema) avro() (*avrodec.Schema, error) {
	s.c.once.Do(func() { s.c.avro, s.c.err = avrodec.Parse(s.text) })
	return s.c.avro, s.c.err
}

// proto returns the writer schema compiled as a Protobuf file, its
// references resolved from what the registry gave.
func (s *writerSchema) proto() (protoreflect.FileDescriptor, error) {
	s.c.once.Do(func() { s.c.fd, s.c.err = protodec.Compile(context.Background(), s.text, s.refs) })
	return s.c.fd, s.c.err
}

// buildAvro builds the decoder of one Avro writer schema.
func buildAvro(table *iceberg.Schema, mapping map[string]string, s *writerSchema, _ []byte) (valueDecoder, error) {
	as, err := s.avro()
	if err != nil {
		return nil, err
	}
	return avrodec.New(table, nilIfEmpty(mapping), as)
}

// buildProtobuf builds the decoder of the message a Protobuf header's
// indexes name in its writer schema.
func buildProtobuf(table *iceberg.Schema, mapping map[string]string, s *writerSchema, hdr []byte) (valueDecoder, error) {
	md, err := s.message(hdr)
	if err != nil {
		return nil, err
	}
	return protodec.New(table, nilIfEmpty(mapping), md)
}

// message returns the message a Protobuf header's indexes name.
func (s *writerSchema) message(hdr []byte) (protoreflect.MessageDescriptor, error) {
	fd, err := s.proto()
	if err != nil {
		return nil, err
	}
	idx := []int{0}
	if len(hdr) > confluentHeaderLen {
		if idx, _, err = protodec.ReadIndexes(hdr[confluentHeaderLen:]); err != nil {
			return nil, err
		}
	}
	return protodec.MessageAt(fd, idx)
}

// protobufHeader returns the length of the magic byte, the schema id and
// the message indexes.
func protobufHeader(p []byte) (int, error) {
	if _, err := confluentHeader(p, decode.ReasonNotProtobuf); err != nil {
		return 0, err
	}
	// Scanned without building the indexes: a header seen before needs
	// only its length (protodec.ReadIndexes reads them for a new one).
	b := p[confluentHeaderLen:]
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > int64(len(b)) {
		return 0, &decode.Error{Reason: decode.ReasonNotProtobuf, Err: fmt.Errorf("message indexes: bad count")}
	}
	b = b[k:]
	for range n {
		if _, k = binary.Varint(b); k <= 0 {
			return 0, &decode.Error{Reason: decode.ReasonNotProtobuf, Err: fmt.Errorf("message indexes: truncated")}
		}
		b = b[k:]
	}
	return len(p) - len(b), nil
}

// nilIfEmpty passes a dataset without customMapping as a nil mapping,
// which the Avro and Protobuf decoders read as by name.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
