package demo

import (
	"testing"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
)

// The configuration `ingestor demo --format avro|protobuf` writes loads
// strictly, reads the format's topic by name (no customMapping) through
// the registry it names, into a table of its own with the narrow shape's
// columns; the JSON demo's stays as it was.
func TestConfigFormats(t *testing.T) {
	const registry = "http://127.0.0.1:18081"
	for _, tc := range []struct {
		format, topic, table string
		mapped, columns      int
	}{
		{config.FormatJSON, "clicks", "web.clicks", 9, 9},
		{config.FormatAvro, "clicks-avro", "web.clicks_avro", 0, len(devenv.NarrowShape().Columns)},
		{config.FormatProtobuf, "clicks-protobuf", "web.clicks_protobuf", 0, len(devenv.NarrowShape().Columns)},
	} {
		t.Run(tc.format, func(t *testing.T) {
			reg := registry
			if tc.format == config.FormatJSON {
				reg = ""
			}
			y := Config(t.TempDir(), "127.0.0.1:9092", []int{1, 2, 3, 4}, tc.format, reg)
			cfg, err := config.Parse([]byte(y))
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			ds := cfg.Datasets[0]
			if ds.Topic != tc.topic || ds.Table != tc.table || len(ds.CustomMapping) != tc.mapped || len(ds.Create.Columns) != tc.columns {
				t.Errorf("topic %s, table %s, %d mapped, %d columns; want %s, %s, %d, %d",
					ds.Topic, ds.Table, len(ds.CustomMapping), len(ds.Create.Columns), tc.topic, tc.table, tc.mapped, tc.columns)
			}
			r := cfg.RegistryFor(ds)
			switch {
			case tc.format == config.FormatJSON && r != nil:
				t.Errorf("the JSON demo names a registry: %+v", r)
			case tc.format != config.FormatJSON && (ds.Format != tc.format || r == nil || r.URL != registry):
				t.Errorf("format %q, registry %+v; want %s at %s", ds.Format, r, tc.format, registry)
			}
		})
	}
}
