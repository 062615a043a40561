package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/storage"
)

// corruptingProxy forwards to Azurite and flips one byte in the body of
// each PUT while armed: a body changed on its way to the store.
func corruptingProxy(t *testing.T, a *devenv.Azurite) (host string, flipped *atomic.Int64) {
	t.Helper()
	target, _ := url.Parse("http://" + a.Host())
	rp := httputil.NewSingleHostReverseProxy(target)
	flipped = &atomic.Int64{}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rp.Transport = roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPut && r.ContentLength > 1000 {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			b[len(b)/2] ^= 0x01
			flipped.Add(1)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		return tr.RoundTrip(r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), flipped
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAzurePutRefusesABodyChangedInTransfer: the store's integrity check
// covers the transfer. Each request carries the Content-MD5 of what was
// read from the file; a body changed on its way is refused by the
// service, Put fails (the uploader retries it), and no changed object is
// stored: in one request, and in staged blocks.
func TestAzurePutRefusesABodyChangedInTransfer(t *testing.T) {
	a := startAzurite(t)
	proxy, flipped := corruptingProxy(t, a)
	props := a.Properties()
	props["adls.endpoint"] = proxy
	st := storage.Open(props)
	defer closeIdle(st)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		size int
	}{{"one request", 1 << 20}, {"blocks", 9 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			rand.Read(data)
			path := writeTemp(t, data)
			loc := a.Location(container, "transfer/"+strings.ReplaceAll(tc.name, " ", "-")+".parquet")
			before := flipped.Load()
			err := putFile(ctx, st, loc, path, int64(len(data)))
			if flipped.Load() == before {
				t.Fatal("the proxy changed no request")
			}
			if err == nil {
				t.Fatal("Put of a body changed in transfer succeeded")
			}
			if !strings.Contains(err.Error(), "Md5Mismatch") {
				t.Errorf("error %v, want the service's Md5Mismatch", err)
			}
			// Nothing, or nothing else, is stored under the name.
			direct := storage.Open(a.Properties())
			defer closeIdle(direct)
			if rc, err := direct.Get(ctx, loc); err == nil {
				got, _ := io.ReadAll(rc)
				rc.Close()
				t.Errorf("an object of %d bytes is stored after the refused upload", len(got))
			}
		})
	}
}

// writeTemp writes data to a file of the test's and returns its path.
func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "segment.parquet")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// putFile uploads a file as the uploader does: from an *os.File.
func putFile(ctx context.Context, st storage.Store, loc, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return st.Put(ctx, loc, f, size)
}

// closeIdle drops a store's idle connections, for goleak.
func closeIdle(st storage.Store) {
	if c, ok := st.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
