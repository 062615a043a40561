package metrics

import (
	"context"
	"io"
	"net/http"
	"testing"
)

func TestServeRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	route := Route{Pattern: "GET /status", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"role":"committer"}`)
	})}
	addr, err := Serve(ctx, "127.0.0.1:0", NewRegistry("committer"), nil, route)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	base := "http://" + addr.String()
	if code, body := get(t, client, base+"/status"); code != http.StatusOK || body != `{"role":"committer"}` {
		t.Errorf("/status = %d %q", code, body)
	}
	if code, body := get(t, client, base+"/metrics"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("/metrics = %d beside a route", code)
	}
	resp, err := client.Post(base+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status = %d, want 405: the route's pattern holds its method", resp.StatusCode)
	}
}
