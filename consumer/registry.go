package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/kafkaclient"
)

// Registry backoff: the first retry of a failed fetch comes after
// registryBackoffMin, each next one after twice as long, up to
// registryBackoffMax, so that a registry coming back is seen within
// seconds and one that stays down gets a request every few seconds per
// schema id, not a flood.
const (
	registryBackoffMin = 100 * time.Millisecond
	registryBackoffMax = 5 * time.Second
	// registryTimeout bounds one request to the registry.
	registryTimeout = 10 * time.Second
	// registryMissingTTL is how long the answer that an id does not exist
	// is kept: after it, the next record naming the id asks again, so a
	// schema restored in the registry (or a reference subject deleted by
	// mistake and put back) is found without a restart.
	registryMissingTTL = 5 * time.Minute
)

// registryMissingAfter is how long the registry must keep answering that
// a schema id (or a schema it references) does not exist before records
// naming it are dropped as unknown_schema; until then they wait as in an
// outage. A registry answers "not found" for a schema that exists when
// the replica it asked has not yet read the registration (a producer
// registers, then writes at once), and a drop on that answer alone would
// send good records to the dead-letter topic. A variable so that tests
// of the drops need not wait it out.
var registryMissingAfter = 10 * time.Second

// schemaState is what the cache knows of one schema id.
type schemaState int

const (
	// schemaPending: not fetched yet, or the registry could not be asked.
	schemaPending schemaState = iota
	// schemaReady: fetched, with its references.
	schemaReady
	// schemaMissing: the registry answered that no schema has this id.
	schemaMissing
)

// writerSchema is a schema fetched from the registry: its text and type,
// and the texts of the schemas it references, by the names it imports
// them under (Protobuf imports, Avro named types), followed to the end.
type writerSchema struct {
	id   int
	text string
	typ  sr.SchemaType
	refs map[string]string
	c    compiled
}

// schemaEntry is the cache's slot of one schema id. done is closed once
// the fetch ended with a schema or with the registry's lasting answer
// that there is none; schema, missing and at are set before and never
// change after.
type schemaEntry struct {
	done    chan struct{}
	schema  *writerSchema
	missing bool
	at      time.Time // when missing was settled
}

// stale reports whether e holds a missing answer older than ttl, which
// the cache drops to ask the registry again.
func (e *schemaEntry) stale(ttl time.Duration) bool {
	select {
	case <-e.done:
		return e.missing && time.Since(e.at) >= ttl
	default:
		return false
	}
}

// schemaRegistry fetches the writer schemas records name by id, once per
// id, and keeps them for the life of the process: a schema id never
// changes meaning in a registry, so nothing is ever fetched again. Only
// the answer that an id does not exist is asked again, after
// registryMissingTTL. A
// record whose id is not cached yet never waits on the record path: the
// first lookup starts one fetch in the background, the record's partition
// waits (schemawait.go), and the fetch is retried with backoff for as
// long as the registry cannot answer. It is shared by the datasets that
// name the same registry.
type schemaRegistry struct {
	cl  *sr.Client
	url string
	tr  *http.Transport
	log *slog.Logger
	m   *metrics

	ctx    context.Context // ends the fetches when the consumer stops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errLog *kafkaclient.Limiter

	// missingAfter and missingTTL: registryMissingAfter and
	// registryMissingTTL, fields so that a test can shorten them.
	missingAfter, missingTTL time.Duration

	mu   sync.Mutex
	byID map[int]*schemaEntry
}

// newSchemaRegistry builds the client of one schemaRegistry block; key
// names the block in errors.
func newSchemaRegistry(rc *config.SchemaRegistry, key string, log *slog.Logger, m *metrics) (*schemaRegistry, error) {
	opts := []sr.ClientOpt{sr.URLs(rc.URL), sr.UserAgent("ingestor")}
	// A transport of its own: close drops its idle connections without
	// touching the process's default one.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if rc.TLS != nil {
		tc, err := kafkaclient.TLSConfig(rc.TLS, key+".tls")
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	httpcl := &http.Client{Timeout: registryTimeout, Transport: tr}
	opts = append(opts, sr.HTTPClient(httpcl))
	switch {
	case rc.Token != "":
		opts = append(opts, sr.BearerToken(rc.Token))
	case rc.Username != "":
		opts = append(opts, sr.BasicAuth(rc.Username, rc.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &schemaRegistry{
		cl: cl, url: rc.URL, tr: tr, log: log.With("registry", rc.String()), m: m,
		ctx: ctx, cancel: cancel, errLog: kafkaclient.NewLimiter(10 * time.Second),
		missingAfter: registryMissingAfter, missingTTL: registryMissingTTL,
		byID: map[int]*schemaEntry{},
	}, nil
}

// close ends the background fetches and waits for them.
func (r *schemaRegistry) close() {
	r.cancel()
	r.wg.Wait()
	r.tr.CloseIdleConnections()
}

// lookup returns what the cache holds of id without waiting; a pending
// id has its fetch started, once.
func (r *schemaRegistry) lookup(id int) (*writerSchema, schemaState) {
	e := r.entry(id)
	select {
	case <-e.done:
		if e.missing {
			return nil, schemaMissing
		}
		return e.schema, schemaReady
	default:
		return nil, schemaPending
	}
}

// wait returns when id's fetch has ended, or ctx has.
func (r *schemaRegistry) wait(ctx context.Context, id int) error {
	e := r.entry(id)
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *schemaRegistry) entry(id int) *schemaEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.byID[id]
	if e == nil || e.stale(r.missingTTL) {
		e = &schemaEntry{done: make(chan struct{})}
		r.byID[id] = e
		r.wg.Go(func() { r.fetchLoop(id, e) })
	}
	return e
}

// fetchLoop fetches id until the registry answers, with backoff, and
// fills e.
func (r *schemaRegistry) fetchLoop(id int, e *schemaEntry) {
	backoff := registryBackoffMin
	var notFoundSince time.Time // the first "not found" answer, if any
	for {
		s, err := r.fetch(r.ctx, id)
		switch {
		case err == nil:
			e.schema = s
			r.m.schemasFetched.Inc()
			r.log.Info("schema fetched from the registry", "schema_id", id, "type", s.typ.String(), "references", len(s.refs))
			close(e.done)
			return
		case r.ctx.Err() != nil:
			return
		case isNotFound(err):
			if notFoundSince.IsZero() {
				notFoundSince = time.Now()
			}
			if time.Since(notFoundSince) >= r.missingAfter {
				e.missing, e.at = true, time.Now()
				r.log.Warn("the registry has no schema of this id: records naming it go to the dead-letter topic as unknown_schema",
					"schema_id", id, "error", err, "asked_for", time.Since(notFoundSince).Round(time.Millisecond).String())
				close(e.done)
				return
			}
			// Not an outage, so not counted as a registry error: the
			// records wait while the answer is confirmed.
			if ok, suppressed := r.errLog.Allow(err.Error()); ok {
				r.log.Warn("the registry answers that this schema does not exist: the records naming it wait while it is asked again",
					"schema_id", id, "error", err, "drop_after", r.missingAfter.String(), "suppressed", suppressed)
			}
		default:
			r.m.registryErrors.Inc()
			if ok, suppressed := r.errLog.Allow(err.Error()); ok {
				r.log.Warn("schema registry unavailable: the records naming this schema wait in Kafka, their partitions paused, and the fetch is retried",
					"schema_id", id, "error", err, "retry_in", backoff.String(), "suppressed", suppressed)
			}
		}
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, registryBackoffMax)
	}
}

// fetch asks the registry for id and every schema it references.
func (r *schemaRegistry) fetch(ctx context.Context, id int) (*writerSchema, error) {
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	out := &writerSchema{id: id, text: s.Schema, typ: s.Type, refs: map[string]string{}}
	if err := r.resolveRefs(ctx, s.References, out.refs, 0); err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	return out, nil
}

// maxRefDepth bounds how deep references are followed: a cycle the
// registry let in must not loop for ever.
const maxRefDepth = 32

// resolveRefs adds the text of each reference, and of theirs, to into.
func (r *schemaRegistry) resolveRefs(ctx context.Context, refs []sr.SchemaReference, into map[string]string, depth int) error {
	if depth > maxRefDepth {
		return fmt.Errorf("references nest deeper than %d", maxRefDepth)
	}
	for _, ref := range refs {
		if _, ok := into[ref.Name]; ok {
			continue
		}
		ss, err := r.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return fmt.Errorf("reference %s (subject %s version %d): %w", ref.Name, ref.Subject, ref.Version, err)
		}
		into[ref.Name] = ss.Schema.Schema
		if err := r.resolveRefs(ctx, ss.Schema.References, into, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// latest returns the newest schema registered under subject, with its
// references: what a table created from the registry is built from.
func (r *schemaRegistry) latest(ctx context.Context, subject string) (*writerSchema, error) {
	ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return nil, fmt.Errorf("latest schema of subject %s: %w", subject, err)
	}
	out := &writerSchema{id: ss.ID, text: ss.Schema.Schema, typ: ss.Schema.Type, refs: map[string]string{}}
	if err := r.resolveRefs(ctx, ss.Schema.References, out.refs, 0); err != nil {
		return nil, fmt.Errorf("latest schema of subject %s: %w", subject, err)
	}
	return out, nil
}

// isNotFound reports whether the registry answered that the schema id
// does not exist, the one answer that drops records rather than making
// them wait. A reference that is not found counts too: the schema can
// never be compiled.
func isNotFound(err error) bool {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	switch re.ErrorCode {
	case sr.ErrSchemaNotFound.Code, sr.ErrSubjectNotFound.Code, sr.ErrVersionNotFound.Code:
		return true
	}
	return false
}

// registries builds one client per distinct registry the datasets use,
// keyed by the block's URL and credentials, so that datasets sharing a
// registry share its cache.
type registries struct {
	byKey map[config.SchemaRegistry]*schemaRegistry
}

func (rs *registries) get(rc *config.SchemaRegistry, key string, log *slog.Logger, m *metrics) (*schemaRegistry, error) {
	k := *rc
	k.TLS = nil // compared by URL and credentials; the TLS block of one URL is one
	if r := rs.byKey[k]; r != nil {
		return r, nil
	}
	r, err := newSchemaRegistry(rc, key, log, m)
	if err != nil {
		return nil, err
	}
	if rs.byKey == nil {
		rs.byKey = map[config.SchemaRegistry]*schemaRegistry{}
	}
	rs.byKey[k] = r
	return r, nil
}

func (rs *registries) close() {
	for _, r := range rs.byKey {
		r.close()
	}
}
