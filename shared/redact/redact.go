package redact

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/icewal/ingestor/shared/config"
)

// Mask is what a secret is replaced with.
const Mask = "REDACTED"

// minSecretLen is the shortest value replaced: shorter ones would mangle
// ordinary words of a message.
const minSecretLen = 4

// secretKeyParts mark a catalog property whose value is a secret.
var secretKeyParts = []string{"credential", "token", "key", "secret", "password", "sas", "connection-string", "signature"}

// publicKeys are catalog properties whose names hold a secret key part
// but whose values are not secret.
var publicKeys = map[string]bool{
	"adls.auth.shared-key.account.name": true,
	"rest.authorization-url":            true,
	"oauth2-server-uri":                 true,
	"token-type":                        true,
}

var (
	// dsnPassword finds the password of a key=value DSN (PostgreSQL style).
	dsnPassword = regexp.MustCompile(`(?i)\bpassword\s*=\s*('[^']*'|[^\s;]+)`)
	// urlQuery is the query string of a URL in a text: with a SAS token
	// it is the credential.
	urlQuery = regexp.MustCompile(`(?i)(https?://[^\s"'?]+)\?[^\s"']*`)
	// userinfoPassword is the password of a URL in a text.
	userinfoPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@"']+):[^@\s/"']+@`)
)

// Redactor removes a configuration's secret values from text.
type Redactor struct {
	secrets []string        // longest first
	seen    map[string]bool // while collecting
}

// New collects the secrets of cfg: those of its catalog properties
// (Properties) and the Kafka SASL password and token.
func New(cfg *config.Config) *Redactor {
	r := &Redactor{seen: map[string]bool{}}
	if cfg != nil {
		r.addProperties(cfg.Catalog.Properties)
		if s := cfg.Kafka.SASL; s != nil {
			r.add(s.Password)
			r.add(s.Token)
		}
	}
	r.sort()
	return r
}

// Properties collects the secrets of a property map (the catalog's, which
// also configure the storage): the values of the properties whose names
// mark a credential (keys, tokens, passwords, SAS, connection strings)
// with their parts, the passwords of URIs and DSNs in any property, and
// the credentials in URL query strings; each in its plain and escaped
// forms. This is the one rule of what is secret.
func Properties(props map[string]string) *Redactor {
	r := &Redactor{seen: map[string]bool{}}
	r.addProperties(props)
	r.sort()
	return r
}

func (r *Redactor) addProperties(props map[string]string) {
	for k, v := range props {
		if v == "" {
			continue
		}
		if isSecretKey(k) {
			r.add(v)
			addParts(v, r.add)
		}
		for _, m := range dsnPassword.FindAllStringSubmatch(v, -1) {
			r.add(strings.Trim(m[1], "'"))
		}
		if u, err := url.Parse(v); err == nil {
			if u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					r.add(pw)
				}
			}
			for qk, qv := range u.Query() {
				if isSecretKey(qk) || strings.EqualFold(qk, "sig") {
					for _, s := range qv {
						r.add(s)
					}
				}
			}
		}
	}
}

// add records a secret value in its plain, escaped and unescaped forms;
// forms shorter than minSecretLen are left out.
func (r *Redactor) add(v string) {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	if u, err := url.QueryUnescape(v); err == nil && u != v {
		forms = append(forms, u)
	}
	for _, s := range forms {
		if len(s) >= minSecretLen && !r.seen[s] {
			r.seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
}

// sort puts the longest secrets first, so that a secret holding another
// is masked whole.
func (r *Redactor) sort() {
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	r.seen = nil
}

// addParts adds the secret parts of a value: an Azure connection string's
// AccountKey and SharedAccessSignature, a SAS token's signature.
func addParts(v string, add func(string)) {
	for _, part := range strings.Split(v, ";") {
		if name, val, ok := strings.Cut(part, "="); ok {
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "accountkey", "sharedaccesssignature", "password":
				add(val)
			}
		}
	}
	if q, err := url.ParseQuery(strings.TrimPrefix(v, "?")); err == nil {
		for _, sig := range q["sig"] {
			add(sig)
		}
	}
}

func isSecretKey(k string) bool {
	lk := strings.ToLower(k)
	if publicKeys[lk] {
		return false
	}
	for _, p := range secretKeyParts {
		if strings.Contains(lk, p) {
			return true
		}
	}
	return false
}

// String returns s with every secret replaced by Mask, and with URL query
// strings and URL passwords masked whatever they hold.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, Mask)
	}
	s = urlQuery.ReplaceAllString(s, "$1?"+Mask)
	s = userinfoPassword.ReplaceAllString(s, "$1:"+Mask+"@")
	return s
}

// Value returns v with every string in it, map keys included, passed
// through String. It walks what encoding/json decodes into (maps, slices,
// strings, numbers, booleans) and maps and slices of strings; other values
// are returned as they are.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[r.String(k)] = r.Value(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = r.Value(val)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, val := range x {
			out[r.String(k)] = r.String(val)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, val := range x {
			out[i] = r.String(val)
		}
		return out
	}
	return v
}
