package config

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// KeyError is a configuration mistake at one key.
type KeyError struct {
	// Key is the full path of the key, e.g. "ingestion.wal.maxFileAgeMinutes".
	Key string
	// Problem says what is wrong with it.
	Problem string
}

func (e *KeyError) Error() string {
	if e.Key == "" {
		return e.Problem
	}
	return e.Key + ": " + e.Problem
}

// Parse checks and decodes a configuration document and applies defaults.
// Every mistake found is reported, each with its key path.
func Parse(doc []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, &KeyError{Problem: "not valid YAML: " + err.Error()}
	}
	// A boolean whose default is true, and a number whose 0 means off, are
	// set before decoding: the file can only turn them off or change them.
	c := &Config{Maintenance: Maintenance{
		Enabled:         true,
		CompactionFanIn: DefaultMaintenanceCompactionFanIn,
		MaxSnapshots:    DefaultMaintenanceMaxSnapshots,
		OrphanAgeHours:  DefaultMaintenanceOrphanAgeHours,

		IdleCompactionMinutes: DefaultMaintenanceIdleCompactionMinutes,
	}}
	if len(root.Content) == 0 {
		return nil, &KeyError{Problem: "empty configuration"}
	}
	var errs []error
	decodeNode(root.Content[0], reflect.ValueOf(c).Elem(), "", &errs)
	// The values are checked even when some keys did not decode, so that
	// one run names every problem; a key that did not decode is reported
	// once, for that, and not again as missing or wrong.
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		errs = append(errs, withoutKeys(err, errs)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// withoutKeys returns the errors joined in err whose key none of seen has.
func withoutKeys(err error, seen []error) []error {
	keys := map[string]bool{}
	for _, e := range seen {
		var ke *KeyError
		if errors.As(e, &ke) {
			keys[ke.Key] = true
		}
	}
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{err}
	}
	var out []error
	for _, e := range all {
		var ke *KeyError
		if errors.As(e, &ke) && keys[ke.Key] {
			continue
		}
		out = append(out, e)
	}
	return out
}

var catalogType = reflect.TypeOf(Catalog{})

// decodeNode decodes n into v, reporting unknown keys and wrong types with
// their path instead of yaml's line-based messages.
func decodeNode(n *yaml.Node, v reflect.Value, path string, errs *[]error) {
	fail := func(problem string) { *errs = append(*errs, &KeyError{Key: path, Problem: problem}) }
	if n.Kind == yaml.AliasNode {
		// Aliases may refer to themselves; a configuration never needs
		// them, so they are refused rather than followed.
		fail("YAML aliases are not supported")
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if v.Type() == catalogType {
		decodeCatalog(n, v.Addr().Interface().(*Catalog), path, errs)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		decodeNode(n, nv.Elem(), path, errs)
		v.Set(nv)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			fail("want a mapping, got " + describe(n))
			return
		}
		fields := map[string]int{}
		for i := 0; i < v.NumField(); i++ {
			tag := strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" {
				fields[tag] = i
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			idx, ok := fields[key]
			if !ok {
				*errs = append(*errs, &KeyError{Key: join(path, key), Problem: "unknown key"})
				continue
			}
			decodeNode(n.Content[i+1], v.Field(idx), join(path, key), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			fail("want a mapping, got " + describe(n))
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			ev := reflect.New(v.Type().Elem()).Elem()
			decodeNode(n.Content[i+1], ev, join(path, key), errs)
			m.SetMapIndex(reflect.ValueOf(key), ev)
		}
		v.Set(m)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			fail("want a list, got " + describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			decodeNode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), errs)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			fail("want a string, got " + describe(n))
			return
		}
		s, err := expand(n.Value)
		if err != nil {
			fail(err.Error())
			return
		}
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || err != nil {
			fail("want true or false, got " + describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		if n.Kind != yaml.ScalarNode || n.Tag == "!!str" || err != nil {
			fail("want a whole number, got " + describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || n.Tag == "!!str" || err != nil {
			fail("want a number, got " + describe(n))
			return
		}
		v.SetFloat(f)
	default:
		fail("unsupported key type " + v.Type().String())
	}
}

// decodeCatalog keeps "name" and passes every other key through as an
// iceberg-go catalog property.
func decodeCatalog(n *yaml.Node, c *Catalog, path string, errs *[]error) {
	if n.Kind != yaml.MappingNode {
		*errs = append(*errs, &KeyError{Key: path, Problem: "want a mapping, got " + describe(n)})
		return
	}
	c.Properties = map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		if val.Kind != yaml.ScalarNode {
			*errs = append(*errs, &KeyError{Key: join(path, key), Problem: "want a string, got " + describe(val)})
			continue
		}
		s, err := expand(val.Value)
		if err != nil {
			*errs = append(*errs, &KeyError{Key: join(path, key), Problem: err.Error()})
			continue
		}
		if key == "name" {
			c.Name = s
			continue
		}
		c.Properties[key] = s
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	tableNameRE = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+$`)
	topicRE     = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)
	datasetRE   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// Validate checks values that decode but cannot work.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, problem string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Problem: fmt.Sprintf(problem, args...)})
	}
	in := c.Ingestion
	if c.Maintenance.IntervalSeconds < 0 {
		bad("maintenance.intervalSeconds", "must be positive, got %v", c.Maintenance.IntervalSeconds)
	}
	if c.Maintenance.CompactionFanIn < 0 || c.Maintenance.CompactionFanIn == 1 {
		bad("maintenance.compactionFanIn", "must be at least 2, got %v", c.Maintenance.CompactionFanIn)
	}
	if c.Maintenance.IdleCompactionMinutes < 0 {
		bad("maintenance.idleCompactionMinutes", "must be positive or 0 (no idle compaction), got %v", c.Maintenance.IdleCompactionMinutes)
	}
	if l := c.Maintenance.Lease; l != "" && l != "kafka" && l != "none" {
		bad("maintenance.lease", "must be kafka or none, got %q", l)
	}
	if c.Maintenance.LeaseSessionTimeoutSeconds < 0 {
		bad("maintenance.leaseSessionTimeoutSeconds", "must be positive, got %v", c.Maintenance.LeaseSessionTimeoutSeconds)
	}
	if c.Maintenance.OrphanAgeHours < 0 {
		bad("maintenance.orphanAgeHours", "must be positive or 0 (no orphan cleanup), got %v", c.Maintenance.OrphanAgeHours)
	}
	if c.Maintenance.MaxSnapshots < 0 {
		bad("maintenance.maxSnapshots", "must be positive or 0 (no cap), got %v", c.Maintenance.MaxSnapshots)
	}
	if c.Maintenance.MaxManifests < 0 {
		bad("maintenance.maxManifests", "must be positive, got %v", c.Maintenance.MaxManifests)
	}
	if in.CommitIntervalSeconds < 0 {
		bad("ingestion.commitIntervalSeconds", "must be positive, got %v", in.CommitIntervalSeconds)
	}
	if in.DrainTimeoutSeconds < 0 {
		bad("ingestion.drainTimeoutSeconds", "must be positive, got %v", in.DrainTimeoutSeconds)
	}
	if in.DrainTimeoutSeconds > 0 && in.DrainTimeoutSeconds < 4 {
		bad("ingestion.drainTimeoutSeconds", "must be at least 4: a quarter of it goes to releasing the partitions, which needs a second, got %v", in.DrainTimeoutSeconds)
	}
	if in.StallTimeoutSeconds < 0 {
		bad("ingestion.stallTimeoutSeconds", "must be positive, got %v", in.StallTimeoutSeconds)
	}
	if in.MaxRecordBytes < 0 {
		bad("ingestion.maxRecordBytes", "must be positive, got %d", in.MaxRecordBytes)
	}
	if in.MaxJSONDepth < 0 || in.MaxJSONDepth > 10000 {
		bad("ingestion.maxJSONDepth", "must be between 1 and 10000, got %d", in.MaxJSONDepth)
	}
	if in.WAL.Dir == "" {
		bad("ingestion.wal.dir", "required")
	}
	if in.WAL.MaxFileSizeBytes < 0 {
		bad("ingestion.wal.maxFileSizeBytes", "must be positive, got %d", in.WAL.MaxFileSizeBytes)
	}
	if in.WAL.MaxFileAgeMinutes < 0 {
		bad("ingestion.wal.maxFileAgeMinutes", "must be positive, got %v", in.WAL.MaxFileAgeMinutes)
	}
	if b := in.WAL.MemoryBudgetBytes; b != 0 && b < 4<<20 {
		bad("ingestion.wal.memoryBudgetBytes", "must be at least 4 MiB, got %d", b)
	}
	if in.WAL.MaxOpenSegmentsPerPartition < 0 {
		bad("ingestion.wal.maxOpenSegmentsPerPartition", "must be positive, got %d", in.WAL.MaxOpenSegmentsPerPartition)
	}
	if p := in.WAL.DiskHighWatermarkPct; p <= 5 || p > 100 {
		bad("ingestion.wal.diskHighWatermarkPct", "must be above 5 and at most 100, got %v", p)
	}
	if t := c.Kafka.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		bad("kafka.tls", "certFile and keyFile go together: set both or neither")
	}
	if s := c.Kafka.SASL; s != nil {
		switch s.Mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			if s.Username == "" || s.Password == "" {
				bad("kafka.sasl", "%s needs username and password", s.Mechanism)
			}
		case "OAUTHBEARER":
			if s.Token == "" {
				bad("kafka.sasl.token", "required for OAUTHBEARER")
			}
		default:
			bad("kafka.sasl.mechanism", "want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, got %q", s.Mechanism)
		}
	}
	if len(c.Kafka.Brokers) == 0 {
		bad("kafka.brokers", "required: list at least one host:port")
	}
	for i, b := range c.Kafka.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			bad(fmt.Sprintf("kafka.brokers[%d]", i), "want host:port, got %q", b)
		}
	}
	if c.Catalog.Name == "" {
		bad("catalog.name", "required")
	}
	if c.Catalog.Properties["type"] == "" {
		bad("catalog.type", "required: sql or rest")
	}
	for _, a := range []struct{ key, addr string }{
		{"metrics.address", c.Metrics.Address},
		{"metrics.roles.consumer", c.Metrics.Roles.Consumer},
		{"metrics.roles.uploader", c.Metrics.Roles.Uploader},
		{"metrics.roles.committer", c.Metrics.Roles.Committer},
	} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			bad(a.key, "want host:port or :port, got %q", a.addr)
		}
	}
	validateRegistry("schemaRegistry", c.SchemaRegistry, bad)
	if len(c.Datasets) == 0 {
		bad("datasets", "required: list at least one dataset")
	}
	names, topics := map[string]bool{}, map[string]bool{}
	tables := map[string]string{} // normalised table -> the first dataset writing into it
	for i, d := range c.Datasets {
		p := fmt.Sprintf("datasets[%d]", i)
		switch {
		case d.Name == "":
			bad(p+".name", "required")
		case !datasetRE.MatchString(d.Name):
			bad(p+".name", "use letters, digits, _ and - only, got %q", d.Name)
		case names[d.Name]:
			bad(p+".name", "%q is used by another dataset", d.Name)
		}
		names[d.Name] = true
		switch {
		case d.Topic == "":
			bad(p+".topic", "required")
		case !topicRE.MatchString(d.Topic):
			bad(p+".topic", "not a valid Kafka topic name: %q", d.Topic)
		case topics[d.Topic]:
			bad(p+".topic", "%q is read by another dataset", d.Topic)
		}
		topics[d.Topic] = true
		switch {
		case d.Table == "":
			bad(p+".table", "required")
		case !tableNameRE.MatchString(d.Table):
			bad(p+".table", "want namespace.table, got %q", d.Table)
		default:
			// One table, one dataset: the committer's ledger (the table
			// property ingestor.segments.<wal id>) is keyed by the WAL
			// directory only and each dataset's append keeps only its
			// own topic's entries, so two datasets appending to one table
			// would drop each other's entries and, after an expiry, append
			// a segment a second time. Catalogs differ in whether
			// identifiers are case-sensitive: compare without case, so
			// that Web.Clicks and web.clicks are refused too.
			key := strings.ToLower(d.Table)
			if other, ok := tables[key]; ok {
				bad(p+".table", "datasets %q and %q both write into table %s: the ingestor keeps its exactly-once ledger per table for one dataset; give each dataset its own table", other, d.Name, d.Table)
			} else {
				tables[key] = d.Name
			}
		}
		if d.DeadLetterTopic != "" && !topicRE.MatchString(d.DeadLetterTopic) {
			bad(p+".deadLetterTopic", "not a valid Kafka topic name: %q", d.DeadLetterTopic)
		}
		if d.DeadLetterTopic != "" && d.DeadLetterTopic == d.Topic {
			bad(p+".deadLetterTopic", "must differ from the dataset's topic %q", d.Topic)
		}
		if d.StartOffset != "earliest" && d.StartOffset != "latest" {
			bad(p+".startOffset", "want earliest or latest, got %q", d.StartOffset)
		}
		c.validateFormat(p, d, bad)
		for col, expr := range d.CustomMapping {
			if strings.TrimSpace(expr) == "" {
				bad(p+".customMapping."+col, "empty expression")
			}
		}
		validateUpsert(p, d, bad)
		if d.Create != nil {
			if len(d.Create.Columns) == 0 && !c.SchemaFromSource(d) {
				bad(p+".create.columns", "required: list the table's columns, or take them from the records' schema with schemaRegistry or avroSchemaFile")
			}
			for j, col := range d.Create.Columns {
				if col.Name == "" {
					bad(fmt.Sprintf("%s.create.columns[%d].name", p, j), "required")
				}
				if col.Type == "" {
					bad(fmt.Sprintf("%s.create.columns[%d].type", p, j), "required")
				}
			}
			for j, pf := range d.Create.Partition {
				if pf.Column == "" {
					bad(fmt.Sprintf("%s.create.partition[%d].column", p, j), "required")
				}
			}
		}
	}
	return errors.Join(errs...)
}
