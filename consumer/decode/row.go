package decode

// Row is one decoded record: one value per top-level field of the table
// schema, in schema order; nil is null. Values have these Go types:
//
//	string                 string
//	int                    int32
//	long                   int64
//	float                  float32
//	double                 float64
//	boolean                bool
//	date                   arrow.Date32 (days since 1970-01-01)
//	time                   arrow.Time64 (microseconds since midnight)
//	timestamp, timestamptz arrow.Timestamp (microseconds since the epoch, UTC)
//	timestamp_ns(tz)       arrow.Timestamp (nanoseconds since the epoch, UTC)
//	decimal(P,S)           decimal128.Num (the unscaled value)
//	binary, fixed[L]       []byte
//	uuid                   uuid.UUID (github.com/google/uuid)
//	struct                 []any, one value per struct field in order
//	list                   []any
//	map                    MapValue
//
// Nested values follow the same table, and nil is null at every level.
type Row []any

// MapValue is the Row representation of an Iceberg map: Keys[i] maps to
// Values[i]. Keys are never nil; a JSON object gives its entries sorted by
// key.
type MapValue struct {
	Keys   []any
	Values []any
}
