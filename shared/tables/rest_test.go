package tables

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/icewal/ingestor/shared/config"
)

// restCatalog is the smallest REST catalog server that answers what
// opening a catalog and listing namespaces ask, and records the
// Authorization header of every request. It stands in for a production
// REST catalog (none can run here); the client side is iceberg-go's own.
type restCatalog struct {
	mu    sync.Mutex
	auths []string
	form  map[string]string
}

func (rc *restCatalog) handler() http.Handler {
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.auths = append(rc.auths, r.Header.Get("Authorization"))
	}
	mux.HandleFunc("/v1/oauth/tokens", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		rc.mu.Lock()
		rc.form = map[string]string{"grant_type": r.FormValue("grant_type"), "client_id": r.FormValue("client_id"),
			"client_secret": r.FormValue("client_secret"), "scope": r.FormValue("scope")}
		rc.mu.Unlock()
		if r.FormValue("client_id") != "ingestor" || r.FormValue("client_secret") != "cl1ent-s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "bad client credentials"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "fetched-t0ken", "token_type": "Bearer", "expires_in": 3600,
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
	})
	mux.HandleFunc("/v1/config", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}})
	})
	mux.HandleFunc("/v1/namespaces", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"namespaces": [][]string{{"web"}}})
	})
	return mux
}

func TestRESTCatalogAuth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     map[string]string
		wantAuth  string
		wantError bool
		secret    string
	}{
		{name: "bearer token", props: map[string]string{"token": "st4tic-t0ken"}, wantAuth: "Bearer st4tic-t0ken"},
		{name: "oauth2 client credentials", props: map[string]string{"credential": "ingestor:cl1ent-s3cret", "scope": "catalog"}, wantAuth: "Bearer fetched-t0ken"},
		{name: "wrong client secret", props: map[string]string{"credential": "ingestor:wr0ng-s3cret"}, wantError: true, secret: "wr0ng-s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &restCatalog{}
			srv := httptest.NewServer(rc.handler())
			defer srv.Close()
			props := map[string]string{"type": "rest", "uri": srv.URL}
			for k, v := range tc.props {
				props[k] = v
			}
			ctx := context.Background()
			cat, err := OpenCatalog(ctx, config.Catalog{Name: "rest", Properties: props})
			if err == nil {
				_, err = cat.ListNamespaces(ctx, nil)
			}
			if tc.wantError {
				if err == nil {
					t.Fatal("a wrong client secret was accepted")
				}
				if strings.Contains(err.Error(), tc.secret) {
					t.Fatalf("error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if len(rc.auths) == 0 {
				t.Fatal("no request reached the catalog")
			}
			for _, a := range rc.auths[len(rc.auths)-1:] {
				if a != tc.wantAuth {
					t.Fatalf("Authorization = %q, want %q", a, tc.wantAuth)
				}
			}
			if tc.props["credential"] != "" && (rc.form["grant_type"] != "client_credentials" || rc.form["client_id"] != "ingestor" || rc.form["scope"] != "catalog") {
				t.Fatalf("token request = %v", rc.form)
			}
		})
	}
}
