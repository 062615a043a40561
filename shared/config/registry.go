package config

import (
	"fmt"
	"net/url"
)

// Value formats of a dataset's records, the values of datasets[].format.
const (
	FormatJSON     = "json"
	FormatAvro     = "avro"
	FormatProtobuf = "protobuf"
	// DefaultFormat is datasets[].format where the file does not set it.
	DefaultFormat = FormatJSON
)

// SchemaRegistry is a Confluent-compatible schema registry, where the
// writers of Avro, Protobuf and JSON Schema records register their
// schemas and the consumer fetches them by the id each record carries.
type SchemaRegistry struct {
	// URL is the registry's base URL, http or https.
	URL string `yaml:"url"`
	// Username and Password authenticate with HTTP basic auth.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Token authenticates with a bearer token instead.
	Token string `yaml:"token"`
	// TLS configures the https connection: the CAs, a client certificate.
	TLS *KafkaTLS `yaml:"tls"`
}

// RegistryFor returns the registry a dataset reads its schemas from: its
// own schemaRegistry, else the top-level one; nil when neither is set or
// the dataset's Avro schema is in avroSchemaFile (raw Avro carries no
// schema id to look up).
func (c *Config) RegistryFor(d Dataset) *SchemaRegistry {
	if d.AvroSchemaFile != "" {
		return nil
	}
	if d.SchemaRegistry != nil {
		return d.SchemaRegistry
	}
	return c.SchemaRegistry
}

// validateRegistry checks one schemaRegistry block at key.
func validateRegistry(key string, r *SchemaRegistry, bad func(key, problem string, args ...any)) {
	if r == nil {
		return
	}
	switch u, err := url.Parse(r.URL); {
	case r.URL == "":
		bad(key+".url", "required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		bad(key+".url", "want an http:// or https:// URL, got %q", r.URL)
	}
	if (r.Username == "") != (r.Password == "") {
		bad(key, "username and password go together: set both or neither")
	}
	if r.Token != "" && r.Username != "" {
		bad(key+".token", "set either a bearer token or username and password, not both")
	}
	if t := r.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		bad(key+".tls", "certFile and keyFile go together: set both or neither")
	}
}

// validateFormat checks a dataset's format against where its schemas
// come from.
func (c *Config) validateFormat(p string, d Dataset, bad func(key, problem string, args ...any)) {
	validateRegistry(p+".schemaRegistry", d.SchemaRegistry, bad)
	hasRegistry := d.SchemaRegistry != nil || c.SchemaRegistry != nil
	switch d.Format {
	case FormatJSON:
		if d.AvroSchemaFile != "" {
			bad(p+".avroSchemaFile", "only for format avro, the dataset's format is json")
		}
	case FormatAvro:
		if d.AvroSchemaFile == "" && !hasRegistry {
			bad(p+".format", "avro needs a schema: set schemaRegistry (here or at the top level) for records with the Confluent header, or avroSchemaFile for raw Avro")
		}
		if d.AvroSchemaFile != "" && d.SchemaRegistry != nil {
			bad(p+".avroSchemaFile", "set either avroSchemaFile (raw Avro, no header) or schemaRegistry (the Confluent header), not both")
		}
	case FormatProtobuf:
		if d.AvroSchemaFile != "" {
			bad(p+".avroSchemaFile", "only for format avro, the dataset's format is protobuf")
		}
		if !hasRegistry {
			bad(p+".format", "protobuf needs schemaRegistry (here or at the top level): the records name their schema by its registry id")
		}
	default:
		bad(p+".format", "want json, avro or protobuf, got %q", d.Format)
	}
}

// SchemaFromSource reports whether a dataset's table can be built from
// its writers' schema: an Avro or Protobuf dataset's registry, or its
// Avro schema file, gives one (a JSON Schema does not say enough of the
// types).
func (c *Config) SchemaFromSource(d Dataset) bool {
	return d.Format != FormatJSON && d.Format != "" && (c.RegistryFor(d) != nil || d.AvroSchemaFile != "")
}

// String names the registry for logs and errors, without its secrets.
func (r *SchemaRegistry) String() string {
	if r == nil {
		return "no schema registry"
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return "schema registry"
	}
	u.User = nil
	return fmt.Sprintf("schema registry %s", u.Redacted())
}
