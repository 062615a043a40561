package azure

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// opError is an error whose text has been cleared of secrets. It unwraps
// to the sentinels callers branch on (fs.ErrNotExist and the context
// errors), not to the SDK's error, whose text carries request URLs that
// may hold a SAS token.
type opError struct {
	msg   string
	kinds []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.kinds }

// isNotFound reports whether err says the blob or its container is missing.
func isNotFound(err error) bool {
	return bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound, bloberror.ResourceNotFound)
}

// wrap turns an SDK error into an opError naming the operation and the
// location.
func (s *Store) wrap(op, location string, err error) error {
	if err == nil {
		return nil
	}
	var kinds []error
	if isNotFound(err) {
		kinds = append(kinds, fs.ErrNotExist)
	}
	for _, k := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			kinds = append(kinds, k)
		}
	}
	var detail string
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		// The full text is a multi-line dump of the request and the
		// response body; the status and the code are what an operator needs.
		detail = "HTTP " + strconv.Itoa(re.StatusCode)
		if re.ErrorCode != "" {
			detail += " " + re.ErrorCode
		}
	} else {
		detail = err.Error()
	}
	return &opError{msg: s.redact("azure " + op + " " + location + ": " + detail), kinds: kinds}
}

// urlQuery matches the query string of a URL in an error text: with a SAS
// token it is the credential.
var urlQuery = regexp.MustCompile(`(?i)(https?://[^\s"'?]+)\?[^\s"']*`)

// redact removes URL query strings and every secret value of the
// properties from msg.
func (s *Store) redact(msg string) string {
	msg = urlQuery.ReplaceAllString(msg, "$1?REDACTED")
	for _, v := range s.secrets {
		msg = strings.ReplaceAll(msg, v, "REDACTED")
	}
	return msg
}

// secretKeyParts mark a property whose value must not appear in errors.
var secretKeyParts = []string{"key", "sas", "token", "secret", "password", "credential", "connection-string", "signature"}

// secretValues lists the secret values in props and their parts (a
// connection string's AccountKey and SharedAccessSignature, a SAS token's
// signature), in their plain and URL-escaped forms, longest first.
func secretValues(props map[string]string) []string {
	var out []string
	add := func(v string) {
		if len(v) < 4 { // too short to replace without mangling the text
			return
		}
		out = append(out, v, url.QueryEscape(v), url.PathEscape(v))
		if u, err := url.QueryUnescape(v); err == nil && u != v {
			out = append(out, u)
		}
	}
	for k, v := range props {
		lk := strings.ToLower(k)
		secret := false
		for _, p := range secretKeyParts {
			if strings.Contains(lk, p) {
				secret = true
				break
			}
		}
		// The account name holds "key" in its property name but is public.
		if !secret || v == "" || k == keySharedKeyAccountName {
			continue
		}
		add(v)
		for _, part := range strings.Split(v, ";") {
			if name, val, ok := strings.Cut(part, "="); ok {
				switch strings.ToLower(strings.TrimSpace(name)) {
				case "accountkey", "sharedaccesssignature":
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
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
