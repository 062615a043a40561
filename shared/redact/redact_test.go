package redact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/icewal/ingestor/shared/config"
)

func TestRedactor(t *testing.T) {
	cfg := &config.Config{
		Catalog: config.Catalog{Name: "c", Properties: map[string]string{
			"type":                              "sql",
			"uri":                               "postgres://ingest:pg-Secret-1@db:5432/cat?sslmode=disable",
			"dsn":                               "host=db user=x password='dsn secret 2' dbname=y",
			"adls.auth.shared-key.account.name": "devstoreaccount1",
			"adls.auth.shared-key.account.key":  "AccKey+/3==",
			"adls.connection-string":            "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=ConnKey4567;BlobEndpoint=http://x",
			"adls.sas-token.a":                  "sv=2022&sig=Sig%2Bnature5",
			"credential":                        "client:oauth-secret-6",
			"warehouse":                         "abfs://wh@a.dfs.core.windows.net/wh",
		}},
		Kafka: config.Kafka{SASL: &config.KafkaSASL{Mechanism: "PLAIN", Username: "u", Password: "kafka-pw-7"}},
	}
	r := New(cfg)
	tests := []struct {
		name, in, mustNot, must string
	}{
		{"uri password", "dial postgres://ingest:pg-Secret-1@db:5432/cat: refused", "pg-Secret-1", "ingest:"},
		{"dsn password", "bad dsn secret 2 here", "dsn secret 2", "bad"},
		{"account key", "key AccKey+/3== and escaped AccKey%2B%2F3%3D%3D", "AccKey", ""},
		{"connection string part", "AccountKey=ConnKey4567 rejected", "ConnKey4567", "rejected"},
		{"sas signature", "signature Sig+nature5 did not match", "nature5", "did not match"},
		{"credential", "oauth: client:oauth-secret-6 refused", "oauth-secret-6", "refused"},
		{"kafka password", "sasl kafka-pw-7", "kafka-pw-7", "sasl"},
		{"any url query", "GET https://a.blob.core.windows.net/c/f?sv=1&sig=unknown999 failed", "unknown999", "https://a.blob.core.windows.net/c/f?REDACTED"},
		{"any url password", "connect mysql://root:other-pass@h/db", "other-pass", "mysql://root:REDACTED@h"},
		{"public account name stays", "account devstoreaccount1", "", "devstoreaccount1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if tt.mustNot != "" && strings.Contains(got, tt.mustNot) {
				t.Errorf("String(%q) = %q, still holds %q", tt.in, got, tt.mustNot)
			}
			if tt.must != "" && !strings.Contains(got, tt.must) {
				t.Errorf("String(%q) = %q, lost %q", tt.in, got, tt.must)
			}
		})
	}
	v := r.Value(map[string]any{"errors": []any{"kafka-pw-7"}, "n": 1.0, "kafka-pw-7": map[string]string{"x": "pg-Secret-1"}})
	if s := strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(toString(v), "{", " "), "}", " ")), " "); strings.Contains(s, "kafka-pw-7") || strings.Contains(s, "pg-Secret-1") {
		t.Errorf("Value left a secret: %s", s)
	}
}

func TestRedactorWithoutConfig(t *testing.T) {
	if got := New(nil).String("https://h/p?sig=abc"); got != "https://h/p?REDACTED" {
		t.Errorf("String = %q", got)
	}
}

func toString(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				b.WriteString(k + " ")
				walk(val)
			}
		case map[string]string:
			for k, val := range x {
				b.WriteString(k + " " + val + " ")
			}
		case []any:
			for _, val := range x {
				walk(val)
			}
		case string:
			b.WriteString(x + " ")
		}
	}
	walk(v)
	return b.String()
}

// leakyError is an error type a caller might look for with errors.As; its
// text holds a secret.
type leakyError struct{ text string }

func (e *leakyError) Error() string { return e.text }

func TestErrorNeverUnwrapsToTheSecret(t *testing.T) {
	r := Properties(map[string]string{"adls.sas-token.a": "sv=2022&sig=Sig%2Bnature5", "credential": "client:oauth-secret-6"})
	sentinel := errors.New("not found")
	raw := fmt.Errorf("open: %w: %w: %w", &leakyError{"GET https://a/c?sig=x with client:oauth-secret-6"}, sentinel, context.Canceled)
	err := r.Error(raw, sentinel, io.EOF)
	if strings.Contains(err.Error(), "oauth-secret-6") || !strings.Contains(err.Error(), "open: GET https://a/c?REDACTED with REDACTED") {
		t.Errorf("Error text %q", err)
	}
	var leak *leakyError
	if errors.As(err, &leak) {
		t.Errorf("errors.As reaches the raw error: %q", leak)
	}
	if errors.Is(err, raw) {
		t.Error("errors.Is reaches the raw error")
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, context.Canceled) {
		t.Error("the sentinel or the cancellation is lost")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
		t.Error("the error matches a sentinel its cause does not")
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}

	wrapped := r.Wrap(raw, "azure get c/f: HTTP 403 AuthenticationFailed sig=Sig+nature5", fs.ErrNotExist)
	if strings.Contains(wrapped.Error(), "nature5") || !errors.Is(wrapped, fs.ErrNotExist) || !errors.Is(wrapped, context.Canceled) || errors.As(wrapped, &leak) {
		t.Errorf("Wrap gives %q", wrapped)
	}
}

// TestOneRule checks that a configuration and its catalog properties give
// the same secrets, whichever constructor the caller used, and that the
// shortest and public values are left alone.
func TestOneRule(t *testing.T) {
	props := map[string]string{
		"adls.auth.shared-key.account.name": "devstoreaccount1",
		"adls.auth.shared-key.account.key":  "AccKey+/3==",
		"token":                             "abc", // too short to mask without mangling words
		"rest.authorization-url":            "https://auth.example/oauth",
		"uri":                               "postgres://u:pw123456@db/cat",
	}
	a, b := New(&config.Config{Catalog: config.Catalog{Properties: props}}), Properties(props)
	if !slices.Equal(a.secrets, b.secrets) {
		t.Errorf("New has %q, Properties %q", a.secrets, b.secrets)
	}
	in := "account devstoreaccount1 key AccKey+/3== abc at https://auth.example/oauth as pw123456"
	want := "account devstoreaccount1 key REDACTED abc at https://auth.example/oauth as REDACTED"
	if got := b.String(in); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
