package decode

import (
	"errors"
	"fmt"
)

// Reasons a record does not decode, as Error.Reason; they are bounded,
// so they can label metrics.
const (
	// ReasonNotJSON: the payload is not one JSON value.
	ReasonNotJSON = "not_json"
	// ReasonTooLarge: the payload is over ingestion.maxRecordBytes.
	ReasonTooLarge = "too_large"
	// ReasonTooDeep: the payload nests deeper than ingestion.maxJSONDepth.
	ReasonTooDeep = "too_deep"
	// ReasonConvert: a value does not convert to its column's type, or a
	// general JMESPath expression fails on the document (a function given
	// the wrong type).
	ReasonConvert = "convert"
	// ReasonMissingRequired: a required column is missing or null.
	ReasonMissingRequired = "missing_required"
	// ReasonNotAvro: the payload is not Avro binary of its writer schema, or
	// does not start with the Confluent wire format's magic byte 0 and
	// schema id where a schema registry is configured.
	ReasonNotAvro = "not_avro"
	// ReasonNotProtobuf: the payload is not the Confluent Protobuf wire
	// format (magic byte, schema id, message indexes) or its message does
	// not parse against the schema.
	ReasonNotProtobuf = "not_protobuf"
	// ReasonUnknownSchema: the schema registry answers that the payload's
	// schema id (or its message index) does not exist.
	ReasonUnknownSchema = "unknown_schema"
)

// Error tells why a payload does not decode into a Row.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Column is the top-level column at fault; empty when the payload as a
	// whole is at fault (not JSON, too large, too deep).
	// A nested path (user.address.zip, tags[3]) is in Err's message.
	Column string
	// Err is the underlying error.
	Err error
}

// Error gives the reason, the column and the offending value, truncated.
func (e *Error) Error() string {
	switch e.Reason {
	case ReasonNotJSON:
		return "decode payload: not JSON: " + e.Err.Error()
	case ReasonTooLarge:
		return "decode payload: too large: " + e.Err.Error()
	case ReasonTooDeep:
		return "decode payload: " + e.Err.Error()
	case ReasonNotAvro:
		return "decode payload: not Avro: " + e.Err.Error()
	case ReasonNotProtobuf:
		return "decode payload: not Protobuf: " + e.Err.Error()
	case ReasonUnknownSchema:
		return "decode payload: unknown schema: " + e.Err.Error()
	case ReasonMissingRequired:
		return fmt.Sprintf("decode column %q: required value is missing or null", e.Column)
	}
	return fmt.Sprintf("decode column %q: %v", e.Column, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

var errMissing = errors.New("required value is missing or null")

func syntaxError(err error) *Error {
	if errors.Is(err, errTooDeep) {
		return &Error{Reason: ReasonTooDeep, Err: err}
	}
	return &Error{Reason: ReasonNotJSON, Err: err}
}
