package config

import (
	"strings"
	"testing"
)

// Each mistake in a dataset's format or its schema registry is named by
// its key, and the combinations that work load.
func TestFormatAndRegistryValidation(t *testing.T) {
	const bloom = "    bloomFilterColumns: [event_id]\n"
	tests := []struct {
		name, add, want string
	}{
		{"unknown format", "    format: xml\n", `datasets[0].format: want json, avro or protobuf, got "xml"`},
		{"avro without a schema", "    format: avro\n", "datasets[0].format: avro needs a schema"},
		{"protobuf without a registry", "    format: protobuf\n", "datasets[0].format: protobuf needs schemaRegistry"},
		{"avroSchemaFile with protobuf", "    format: protobuf\n    avroSchemaFile: /s.avsc\n    schemaRegistry: {url: 'http://r:8081'}\n", "datasets[0].avroSchemaFile: only for format avro, the dataset's format is protobuf"},
		{"avroSchemaFile with json", "    avroSchemaFile: /s.avsc\n", "datasets[0].avroSchemaFile: only for format avro"},
		{"avroSchemaFile and a registry", "    format: avro\n    avroSchemaFile: /s.avsc\n    schemaRegistry: {url: 'http://r:8081'}\n", "datasets[0].avroSchemaFile: set either avroSchemaFile"},
		{"registry without url", "    format: avro\n    schemaRegistry: {username: u, password: p}\n", "datasets[0].schemaRegistry.url: required"},
		{"registry url not http", "    format: avro\n    schemaRegistry: {url: 'registry:8081'}\n", `datasets[0].schemaRegistry.url: want an http:// or https:// URL, got "registry:8081"`},
		{"username without password", "    format: avro\n    schemaRegistry: {url: 'http://r:8081', username: u}\n", "datasets[0].schemaRegistry: username and password go together"},
		{"token and basic", "    format: avro\n    schemaRegistry: {url: 'http://r:8081', username: u, password: p, token: t}\n", "datasets[0].schemaRegistry.token: set either a bearer token"},
		{"create without columns nor schema", "    create: {partition: [{column: tenant}]}\n", "datasets[0].create.columns: required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(example, bloom, bloom+tc.add, 1)
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}

	ok := []struct{ name, top, add string }{
		{"avro through the shared registry", "schemaRegistry: {url: 'https://r:8081', token: t}\n", "    format: avro\n    create: {partition: [{column: tenant}]}\n"},
		{"raw avro beside a shared registry", "schemaRegistry: {url: 'https://r:8081'}\n", "    format: avro\n    avroSchemaFile: /s.avsc\n"},
		{"protobuf with its own registry", "", "    format: protobuf\n    schemaRegistry: {url: 'http://r:8081', username: u, password: p}\n"},
		{"json by name, no mapping", "", ""},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.top + strings.Replace(example, bloom, bloom+tc.add, 1)
			if tc.name == "json by name, no mapping" {
				doc = strings.Replace(doc, "    customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts, country: geo.country}\n", "", 1)
			}
			c, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			d := c.Datasets[0]
			switch {
			case d.Format == "":
				t.Fatal("format left empty")
			case tc.name == "raw avro beside a shared registry" && c.RegistryFor(d) != nil:
				t.Fatal("a dataset with avroSchemaFile must not look its schemas up in the registry")
			case tc.name == "avro through the shared registry" && c.RegistryFor(d) != c.SchemaRegistry:
				t.Fatal("the dataset does not take the shared registry")
			}
		})
	}
}
