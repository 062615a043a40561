package consumer

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
)

// valueDecoder decodes the value of one record into a row of one table
// schema: the JSON decoder, and the Avro and Protobuf decoders of one
// writer schema.
type valueDecoder interface {
	DecodeInto(dst decode.Row, payload []byte) (decode.Row, error)
	Limit(maxBytes, maxDepth int)
	Limits() (maxBytes, maxDepth int)
}

// confluentMagic is the first byte of a value in the Confluent wire
// format, followed by the schema id as 4 big-endian bytes.
const confluentMagic = 0

// confluentHeaderLen is the magic byte and the schema id.
const confluentHeaderLen = 5

// schemaWaitError is a record whose schema id the registry has not
// answered for yet: it is not processed, and its partition waits
// (schemawait.go). It is never a drop and never fatal.
type schemaWaitError struct {
	id int
}

func (e *schemaWaitError) Error() string {
	return fmt.Sprintf("schema id %d is not fetched yet", e.id)
}

// buildFunc builds the decoder of one writer schema for a table schema;
// hdr is the value's header (the magic byte, the schema id and, for
// Protobuf, the message indexes) and mapping the dataset's customMapping
// (nil: by name).
type buildFunc func(table *iceberg.Schema, mapping map[string]string, s *writerSchema, hdr []byte) (valueDecoder, error)

// valueFormat is how one dataset's values are read: its format, the
// registry its schema ids are looked up in (nil when values carry no
// header), and how a decoder is built for a writer schema.
type valueFormat struct {
	name    string // config.FormatJSON, FormatAvro, FormatProtobuf
	reg     *schemaRegistry
	mapping map[string]string
	// fixed is the writer schema of raw Avro values (avroSchemaFile).
	fixed *writerSchema
	build buildFunc
	// headerLen returns the length of a value's header, or the drop error
	// of a value that does not start with one.
	headerLen func(payload []byte) (int, error)
}

// jsonFormat is the format of a JSON dataset without a registry: every
// value is decoded as it is.
func jsonFormat(mapping map[string]string) *valueFormat {
	return &valueFormat{name: config.FormatJSON, mapping: mapping}
}

// confluentHeader checks the magic byte and the schema id's room; reason
// is the drop reason of a value without them.
func confluentHeader(payload []byte, reason string) (int, error) {
	if len(payload) < confluentHeaderLen || payload[0] != confluentMagic {
		return 0, &decode.Error{Reason: reason, Err: fmt.Errorf("no Confluent header: the value does not start with the magic byte 0 and a 4-byte schema id")}
	}
	return confluentHeaderLen, nil
}

// recordDecoder decodes the values of one dataset for one table view. A
// value with a header is decoded by the decoder of its header, built the
// first time the header is seen and kept: per schema id (and, for
// Protobuf, per message), so a record costs one map lookup beyond the
// decode itself. It is used under the writer's lock only.
type recordDecoder struct {
	f     *valueFormat
	table *iceberg.Schema
	// plain decodes values that carry no header: every JSON value without
	// a registry, JSON values without the magic byte with one, raw Avro.
	plain valueDecoder
	byHdr map[string]valueDecoder
	// unfit remembers the headers whose writer schema does not fit the
	// table, so that the error is built once.
	unfit              map[string]error
	maxBytes, maxDepth int
}

// newRecordDecoder builds the decoder of f's values for table. What can
// be checked without a record is checked here: the JSON mapping, the
// raw Avro schema against the table.
func newRecordDecoder(f *valueFormat, table *iceberg.Schema) (*recordDecoder, error) {
	d := &recordDecoder{f: f, table: table, byHdr: map[string]valueDecoder{}, unfit: map[string]error{}}
	switch {
	case f.name == config.FormatJSON:
		dec, err := decode.New(table, byNameMapping(table, f.mapping))
		if err != nil {
			return nil, err
		}
		d.plain = dec
	case f.fixed != nil:
		dec, err := f.build(table, f.mapping, f.fixed, nil)
		if err != nil {
			return nil, fmt.Errorf("avroSchemaFile does not fit the table: %w", err)
		}
		d.plain = dec
	}
	return d, nil
}

// Limit sets the size and depth limits of every decoder, present and to come.
func (d *recordDecoder) Limit(maxBytes, maxDepth int) {
	d.maxBytes, d.maxDepth = maxBytes, maxDepth
	if d.plain != nil {
		d.plain.Limit(maxBytes, maxDepth)
	}
	for _, dec := range d.byHdr {
		dec.Limit(maxBytes, maxDepth)
	}
}

// Limits returns what Limit set.
func (d *recordDecoder) Limits() (int, int) { return d.maxBytes, d.maxDepth }

// DecodeInto decodes one value into dst. Besides the decoders' errors it
// returns a *schemaWaitError for a schema id not fetched yet, and drops
// a value without the header its format needs (not_avro, not_protobuf)
// and one naming a schema id the registry does not have (unknown_schema).
func (d *recordDecoder) DecodeInto(dst decode.Row, payload []byte) (decode.Row, error) {
	if d.f.reg == nil {
		return d.plain.DecodeInto(dst, payload)
	}
	if d.f.name == config.FormatJSON && (len(payload) == 0 || payload[0] != confluentMagic) {
		// JSON never starts with a zero byte: a value without the magic
		// byte is plain JSON, also with a registry configured.
		return d.plain.DecodeInto(dst, payload)
	}
	if d.maxBytes > 0 && len(payload) > d.maxBytes {
		return nil, &decode.Error{Reason: decode.ReasonTooLarge, Err: fmt.Errorf("%d bytes, over the limit of %d", len(payload), d.maxBytes)}
	}
	n, err := d.f.headerLen(payload)
	if err != nil {
		return nil, err
	}
	dec, ok := d.byHdr[string(payload[:n])] // no allocation: the compiler looks up the bytes
	if !ok {
		if dec, err = d.resolve(payload[:n]); err != nil {
			return nil, err
		}
	}
	return dec.DecodeInto(dst, payload[n:])
}

// resolve builds the decoder of a header seen for the first time, if its
// schema is cached.
func (d *recordDecoder) resolve(hdr []byte) (valueDecoder, error) {
	if err, ok := d.unfit[string(hdr)]; ok {
		return nil, err
	}
	id := int(binary.BigEndian.Uint32(hdr[1:confluentHeaderLen]))
	s, state := d.f.reg.lookup(id)
	switch state {
	case schemaPending:
		return nil, &schemaWaitError{id: id}
	case schemaMissing:
		return nil, &decode.Error{Reason: decode.ReasonUnknownSchema, Err: fmt.Errorf("schema id %d: the registry has no schema of this id", id)}
	}
	dec := d.plain // JSON: the schema only had to exist
	if d.f.build != nil {
		var err error
		if dec, err = d.f.build(d.table, d.f.mapping, s, hdr); err != nil {
			// The writer schema does not fit the table (a mapped field of
			// another type, a required column it lacks): its records
			// cannot be written, as a value that does not convert.
			err = &decode.Error{Reason: decode.ReasonConvert, Err: fmt.Errorf("schema id %d does not fit the table: %w", id, err)}
			d.unfit[string(hdr)] = err
			return nil, err
		}
		dec.Limit(d.maxBytes, d.maxDepth)
	}
	d.byHdr[string(hdr)] = dec
	return dec, nil
}

// newValueFormat builds how a dataset's values are read; regs shares the
// registry clients between datasets.
func newValueFormat(cfg *config.Config, ds config.Dataset, regs *registries, r registryDeps) (*valueFormat, error) {
	f := &valueFormat{name: ds.Format, mapping: ds.CustomMapping}
	if f.name == "" {
		f.name = config.FormatJSON
	}
	if rc := cfg.RegistryFor(ds); rc != nil {
		key := "schemaRegistry"
		if ds.SchemaRegistry != nil {
			key = "datasets[" + ds.Name + "].schemaRegistry"
		}
		reg, err := regs.get(rc, key, r.log, r.m)
		if err != nil {
			return nil, err
		}
		f.reg = reg
	}
	switch f.name {
	case config.FormatJSON:
		f.headerLen = func(p []byte) (int, error) { return confluentHeader(p, decode.ReasonNotJSON) }
	case config.FormatAvro:
		f.build = buildAvro
		f.headerLen = func(p []byte) (int, error) { return confluentHeader(p, decode.ReasonNotAvro) }
		if ds.AvroSchemaFile != "" {
			text, err := os.ReadFile(ds.AvroSchemaFile)
			if err != nil {
				return nil, fmt.Errorf("avroSchemaFile: %w", err)
			}
			f.fixed = &writerSchema{text: string(text), typ: sr.TypeAvro}
			if _, err := f.fixed.avro(); err != nil {
				return nil, fmt.Errorf("avroSchemaFile %s: %w", ds.AvroSchemaFile, err)
			}
		}
	case config.FormatProtobuf:
		f.build = buildProtobuf
		f.headerLen = protobufHeader
	default:
		return nil, fmt.Errorf("format %q: want json, avro or protobuf", f.name)
	}
	return f, nil
}
