package bench

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icewal/ingestor/consumer/decode/protodec"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
)

// values makes the record values of a run in its format: the shape's JSON
// events as they are, or, for Avro and Protobuf, the same events encoded
// behind the Confluent header (for Protobuf followed by the message
// indexes), their schema registered in a registry the bench starts
// (franz-go's srfake, which serves the registry's HTTP API on loopback),
// and the dataset reading every column by name.
type values struct {
	shape    devenv.Shape
	format   string
	avro     *devenv.AvroShape
	proto    *devenv.ProtoShape
	reg      *srfake.Registry
	schemaID int
}

// newValues prepares the values of format; close releases the registry.
func newValues(format string, shape devenv.Shape) (*values, error) {
	v := &values{shape: shape, format: format}
	var schema sr.Schema
	switch format {
	case "", config.FormatJSON:
		v.format = config.FormatJSON
		return v, nil
	case config.FormatAvro:
		a, err := devenv.NewAvroShape(shape)
		if err != nil {
			return nil, err
		}
		v.avro, schema = a, sr.Schema{Type: sr.TypeAvro, Schema: a.Schema}
	case config.FormatProtobuf:
		p, err := devenv.NewProtoShape(shape)
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

// registryURL is the registry the configuration names; "" for JSON.
func (v *values) registryURL() string {
	if v.reg == nil {
		return ""
	}
	return v.reg.URL()
}

// appendValue appends the value of event seq. Not safe for concurrent use.
func (v *values) appendValue(dst []byte, id, tenant string, seq int64, at time.Time) ([]byte, error) {
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

func (v *values) close() {
	if v.reg != nil {
		v.reg.Close()
	}
}
