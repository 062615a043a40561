package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/avrodec"
	"github.com/icewal/ingestor/consumer/decode/protodec"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
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

// latestSchemaTimeout bounds the start's fetch of the latest writer schema.
const latestSchemaTimeout = 30 * time.Second

// latest returns the dataset's latest writer schema: avroSchemaFile's,
// or the newest version of the subject <topic>-value (the serializers'
// default TopicNameStrategy).
func (f *valueFormat) latest(ctx context.Context, topic string) (*writerSchema, error) {
	if f.fixed != nil {
		return f.fixed, nil
	}
	if f.reg == nil || f.name == config.FormatJSON {
		return nil, fmt.Errorf("format %s: no writer schema to build a table from; list create.columns", f.name)
	}
	ctx, cancel := context.WithTimeout(ctx, latestSchemaTimeout)
	defer cancel()
	return f.reg.latest(ctx, topic+"-value")
}

// tableSchema returns the Iceberg columns of a writer schema, as the
// decoders map its types; a Protobuf schema's first message is the
// record's.
func (f *valueFormat) tableSchema(s *writerSchema) (*iceberg.Schema, error) {
	switch f.name {
	case config.FormatAvro:
		as, err := s.avro()
		if err != nil {
			return nil, err
		}
		return avrodec.TableSchema(as)
	case config.FormatProtobuf:
		md, err := s.message(nil)
		if err != nil {
			return nil, err
		}
		return protodec.TableSchema(md)
	}
	return nil, fmt.Errorf("format %s: no writer schema to build a table from; list create.columns", f.name)
}

// checkTable compares the table with the dataset's latest writer schema
// at start: the decoder of that schema must build for the table (every
// mapped field of a type its column takes) and, read by name, no column
// may be required without a field or narrower than its field. A registry
// that cannot answer now does not stop the start: the records are checked
// one schema id at a time as they come.
func (f *valueFormat) checkTable(ctx context.Context, ds config.Dataset, tbl *iceberg.Schema, log *slog.Logger) error {
	if f.build == nil {
		return nil
	}
	s, err := f.latest(ctx, ds.Topic)
	if err != nil {
		if f.fixed == nil && !isNotFound(err) {
			log.Warn("the table is not compared with the latest writer schema: the registry did not answer", "err", err)
		}
		return nil
	}
	if f.name != config.FormatProtobuf {
		return f.checkAgainst(ds, tbl, s, nil)
	}
	// Which message of a Protobuf schema the records hold is in each
	// record's header, not in the schema: the table must fit one of the
	// top-level messages, and the error names the first one's misfit.
	fd, err := s.proto()
	if err != nil {
		return fmt.Errorf("dataset %s: latest writer schema (id %d): %w", ds.Name, s.id, err)
	}
	var first error
	for i := range fd.Messages().Len() {
		hdr := protodec.AppendIndexes(make([]byte, confluentHeaderLen), []int{i})
		err := f.checkAgainst(ds, tbl, s, hdr)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// checkAgainst compares the table with one message (hdr) of writer schema s.
func (f *valueFormat) checkAgainst(ds config.Dataset, tbl *iceberg.Schema, s *writerSchema, hdr []byte) error {
	if _, err := f.build(tbl, f.mapping, s, hdr); err != nil {
		return fmt.Errorf("dataset %s: table %s does not fit the latest writer schema (id %d): %w", ds.Name, ds.Table, s.id, err)
	}
	if len(ds.CustomMapping) > 0 {
		return nil
	}
	var ws *iceberg.Schema
	var err error
	if hdr == nil {
		ws, err = f.tableSchema(s)
	} else {
		var md protoreflect.MessageDescriptor
		if md, err = s.message(hdr); err == nil {
			ws, err = protodec.TableSchema(md)
		}
	}
	if err != nil {
		return fmt.Errorf("dataset %s: latest writer schema (id %d): %w", ds.Name, s.id, err)
	}
	return tables.CheckWriterSchema(ds, tbl, ws)
}
