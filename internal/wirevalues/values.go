// Package wirevalues makes the record values of the development shapes
// (devenv.Shape) in each value format the ingestor reads, for `ingestor
// bench` and `ingestor demo`: the shape's JSON events as they are, or the
// same events as Avro binary or a Protobuf message behind the Confluent
// header (magic byte, schema id; for Protobuf then the message indexes),
// their schema registered in a schema registry it starts (franz-go's
// srfake, which serves the registry's HTTP API on loopback; no registry
// server can be installed where these run). Each column is one field of
// the same name, so a dataset without customMapping reads them all.
package wirevalues

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icewal/ingestor/consumer/decode/protodec"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/devenv/shapeenc"
	"github.com/icewal/ingestor/shared/config"
)

// Values makes the values of one shape in one format.
type Values struct {
	// Format is config.FormatJSON, FormatAvro or FormatProtobuf.
	Format   string
	shape    devenv.Shape
	avro     *shapeenc.AvroShape
	proto    *shapeenc.ProtoShape
	reg      *srfake.Registry
	schemaID int
}

// New prepares the values of shape in format ("" is JSON), with the
// schema registered under the subject topic-value (the registry's default
// naming); Close releases the registry.
func New(format, topic string, shape devenv.Shape) (*Values, error) {
	v := &Values{shape: shape, Format: format}
	var schema sr.Schema
	switch format {
	case "", config.FormatJSON:
		v.Format = config.FormatJSON
		return v, nil
	case config.FormatAvro:
		a, err := shapeenc.NewAvroShape(shape)
		if err != nil {
			return nil, err
		}
		v.avro, schema = a, sr.Schema{Type: sr.TypeAvro, Schema: a.Schema}
	case config.FormatProtobuf:
		p, err := shapeenc.NewProtoShape(shape)
		if err != nil {
			return nil, err
		}
		v.proto, schema = p, sr.Schema{Type: sr.TypeProtobuf, Schema: p.Schema}
	default:
		return nil, fmt.Errorf("format: want %s, %s or %s, got %q", config.FormatJSON, config.FormatAvro, config.FormatProtobuf, format)
	}
	v.reg = srfake.New()
	var err error
	if v.schemaID, _, err = v.reg.RegisterSchema(topic+"-value", schema); err != nil {
		v.reg.Close()
		return nil, fmt.Errorf("register the shape's %s schema: %w", format, err)
	}
	return v, nil
}

// RegistryURL is the registry a dataset of these values names; "" for
// JSON.
func (v *Values) RegistryURL() string {
	if v.reg == nil {
		return ""
	}
	return v.reg.URL()
}

// Append appends the value of event seq of tenant, made at time at, to
// dst. It is not safe for concurrent use.
func (v *Values) Append(dst []byte, id, tenant string, seq int64, at time.Time) ([]byte, error) {
	if v.reg == nil {
		return v.shape.Append(dst, id, tenant, seq, at), nil
	}
	id32 := uint32(v.schemaID)
	dst = append(dst, 0, byte(id32>>24), byte(id32>>16), byte(id32>>8), byte(id32))
	if v.proto != nil {
		// The schema's only message, Event: indexes [0].
		dst = protodec.AppendIndexes(dst, []int{0})
		return v.proto.Append(dst, id, tenant, seq, at)
	}
	return v.avro.Append(dst, id, tenant, seq, at)
}

// Close stops the registry.
func (v *Values) Close() {
	if v.reg != nil {
		v.reg.Close()
	}
}
