package redact

import (
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
