package consumer

import (
	"encoding/json"

	"github.com/apache/iceberg-go"
)

// byNameMapping returns the mapping a dataset uses: its customMapping, or,
// when it has none, every top-level column taking the top-level field of
// its own name. The name is written as a quoted JMESPath identifier so
// that a column named like a JMESPath keyword or with a dot or a dash
// still names one field; the JSON decoder reads such a plain path in its
// single pass. A configuration that maps every column keeps working as it
// did.
func byNameMapping(schema *iceberg.Schema, custom map[string]string) map[string]string {
	if len(custom) > 0 {
		return custom
	}
	m := make(map[string]string, len(schema.Fields()))
	for _, f := range schema.Fields() {
		q, _ := json.Marshal(f.Name) // a JSON string is a JMESPath quoted identifier
		m[f.Name] = string(q)
	}
	return m
}
