package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/azure"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/storage"
)

const container = "warehouse"

// backend is one way of reaching a store: its properties and where its
// test objects go.
type backend struct {
	name  string
	props map[string]string
	base  string
}

func startAzurite(t *testing.T) *devenv.Azurite {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := devenv.StartAzurite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	if err := a.CreateContainer(ctx, container); err != nil {
		t.Fatal(err)
	}
	return a
}

// backends lists the file store and every Azure authentication route.
func backends(t *testing.T) []backend {
	a := startAzurite(t)
	dir := t.TempDir()
	cred, err := azblob.NewSharedKeyCredential(a.Account(), a.Key())
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, Write: true, Delete: true, Create: true, Add: true, List: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := map[string]string{"adls.endpoint": a.Host(), "adls.protocol": "http"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range endpoint {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	return []backend{
		{name: "file", props: nil, base: "file://" + dir},
		{name: "bare-path", props: nil, base: dir + "/bare"},
		{name: "azure-shared-key", props: a.Properties(), base: a.Location(container, "shared")},
		{
			name:  "azure-connection-string",
			props: map[string]string{"adls.connection-string." + a.Account(): a.ConnectionString()},
			base:  "wasbs://" + container + "@" + a.Account() + ".blob.core.windows.net/cs",
		},
		{
			name:  "azure-sas",
			props: with(map[string]string{"adls.sas-token." + a.Account() + ".dfs.core.windows.net": qp.Encode()}),
			base:  "abfss://" + container + "@" + a.Account() + ".dfs.core.windows.net/sas",
		},
	}
}

func get(t *testing.T, s storage.Store, loc string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), loc)
	if err != nil {
		t.Fatalf("get %s: %v", loc, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", loc, err)
	}
	return b
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConformance runs the same cases against every backend.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := storage.Open(b.props)
			loc := storage.Join(b.base, "data", "00000000-0000-0000-0000-000000000001.parquet")

			t.Run("put and get", func(t *testing.T) {
				want := []byte("first version")
				if err := s.Put(ctx, loc, bytes.NewReader(want), int64(len(want))); err != nil {
					t.Fatal(err)
				}
				if got := get(t, s, loc); !bytes.Equal(got, want) {
					t.Fatalf("got %q, want %q", got, want)
				}
			})
			t.Run("put replaces", func(t *testing.T) {
				want := []byte("second, longer version of the object")
				if err := s.Put(ctx, loc, bytes.NewReader(want), int64(len(want))); err != nil {
					t.Fatal(err)
				}
				if got := get(t, s, loc); !bytes.Equal(got, want) {
					t.Fatalf("got %q, want %q", got, want)
				}
			})
			t.Run("stat", func(t *testing.T) {
				// The committer checks each object this way before its
				// append: its size, and its age against the orphan margin.
				info, err := s.Stat(ctx, loc)
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(len("second, longer version of the object")); info.Size != want {
					t.Fatalf("stat size %d, want %d", info.Size, want)
				}
				if age := time.Since(info.ModTime); age < -time.Minute || age > time.Minute {
					t.Fatalf("stat mod time %s is %s from now, want the time of the put", info.ModTime, age)
				}
			})
			t.Run("readable by iceberg-go", func(t *testing.T) {
				// The committer records these locations in the table, and
				// readers open them with iceberg-go's file IO and the same
				// properties: they must find the same object.
				fsys, err := iceio.LoadFS(ctx, b.props, loc)
				if err != nil {
					t.Fatal(err)
				}
				f, err := fsys.Open(loc)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				got, err := io.ReadAll(f)
				if err != nil {
					t.Fatal(err)
				}
				if want := "second, longer version of the object"; string(got) != want {
					t.Fatalf("iceberg-go read %q, want %q", got, want)
				}
			})
			t.Run("large object from a file, from its position", func(t *testing.T) {
				// Over the single-request limit: uploaded in blocks read
				// from the file. The first 100 bytes are skipped.
				data := randomBytes(t, 20<<20+12345)
				path := filepath.Join(t.TempDir(), "big")
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Seek(100, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				big := storage.Join(b.base, "data", "big.parquet")
				if err := s.Put(ctx, big, f, int64(len(data)-100)); err != nil {
					t.Fatal(err)
				}
				if got := get(t, s, big); !bytes.Equal(got, data[100:]) {
					t.Fatalf("got %d bytes, want %d equal bytes", len(got), len(data)-100)
				}
				// Replace it with a smaller object from a plain reader.
				small := randomBytes(t, 5<<20+7)
				if err := s.Put(ctx, big, iotest.HalfReader(bytes.NewBuffer(small)), int64(len(small))); err != nil {
					t.Fatal(err)
				}
				if got := get(t, s, big); !bytes.Equal(got, small) {
					t.Fatalf("got %d bytes, want the %d bytes of the replacement", len(got), len(small))
				}
				if err := s.Delete(ctx, big); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("short reader", func(t *testing.T) {
				short := storage.Join(b.base, "data", "short.parquet")
				if err := s.Put(ctx, short, strings.NewReader("abc"), 10); err == nil {
					t.Fatal("put of 3 bytes announced as 10 succeeded")
				}
			})
			t.Run("delete", func(t *testing.T) {
				if err := s.Delete(ctx, loc); err != nil {
					t.Fatal(err)
				}
				_, err := s.Get(ctx, loc)
				if !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("get after delete: %v, want ErrNotFound", err)
				}
			})
			t.Run("missing object", func(t *testing.T) {
				missing := storage.Join(b.base, "nowhere", "missing.parquet")
				_, err := s.Get(ctx, missing)
				if !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("get missing: %v, want ErrNotFound", err)
				}
				if !strings.Contains(err.Error(), missing) {
					t.Fatalf("error %q does not name the location", err)
				}
				if err := s.Delete(ctx, missing); err != nil {
					t.Fatalf("delete missing: %v", err)
				}
				if _, err := s.Stat(ctx, missing); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
					t.Fatalf("stat missing: %v, want ErrNotFound naming the location", err)
				}
			})
		})
	}
}

func TestUnsupportedLocation(t *testing.T) {
	s := storage.Open(nil)
	for _, loc := range []string{"s3://bucket/key", "relative/path", "abfs://account.dfs.core.windows.net/no-container", "file://host/path"} {
		if err := s.Put(context.Background(), loc, strings.NewReader("x"), 1); err == nil {
			t.Errorf("put to %q succeeded", loc)
		}
	}
}

// TestErrorsHoldNoSecrets plants secrets in every credential property and
// makes requests fail in the ways they can: refused connections (whose
// errors carry the request URL, SAS token included), authentication
// failures, and missing containers.
func TestErrorsHoldNoSecrets(t *testing.T) {
	a := startAzurite(t)
	const planted = "PLANTEDs3cr3tSIGNATURE"
	// A valid base64 account key that is not the account's.
	plantedKey := "UExBTlRFRC1LRVktUExBTlRFRC1LRVktUExBTlRFRC1LRVk="
	dead := "127.0.0.1:1"
	host := a.Account() + ".dfs.core.windows.net"
	sasToken := "sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2099-01-01T00:00:00Z&spr=https,http&sig=" + planted
	cases := []struct {
		name  string
		props map[string]string
	}{
		{"sas token, refused", map[string]string{"adls.sas-token." + host: sasToken, "adls.endpoint": dead, "adls.protocol": "http"}},
		{"sas token, rejected", map[string]string{"adls.sas-token." + host: "?" + sasToken, "adls.endpoint": a.Host(), "adls.protocol": "http"}},
		{"shared key, rejected", map[string]string{"adls.auth.shared-key.account.name": a.Account(), "adls.auth.shared-key.account.key": plantedKey, "adls.endpoint": a.Host(), "adls.protocol": "http"}},
		{"shared key, refused", map[string]string{"adls.auth.shared-key.account.name": a.Account(), "adls.auth.shared-key.account.key": plantedKey, "adls.endpoint": dead, "adls.protocol": "http"}},
		{"shared key, not base64", map[string]string{"adls.auth.shared-key.account.name": a.Account(), "adls.auth.shared-key.account.key": planted + "!!"}},
		{"connection string, refused", map[string]string{"adls.connection-string." + a.Account(): fmt.Sprintf(
			"DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://%s/%s;", a.Account(), plantedKey, dead, a.Account())}},
		{"connection string with sas, refused", map[string]string{"adls.connection-string." + a.Account(): fmt.Sprintf(
			"BlobEndpoint=http://%s/%s;SharedAccessSignature=%s", dead, a.Account(), sasToken)}},
		{"connection string, malformed", map[string]string{"adls.connection-string." + a.Account(): "AccountKey=" + plantedKey + ";garbage"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := storage.Open(c.props)
			for _, loc := range []string{a.Location(container, "x/obj"), a.Location("no-such-container", "x/obj")} {
				var errs []error
				errs = append(errs, s.Put(ctx, loc, strings.NewReader("data"), 4))
				_, err := s.Get(ctx, loc)
				errs = append(errs, err)
				errs = append(errs, s.Delete(ctx, loc))
				failed := 0
				for _, err := range errs {
					if err == nil {
						continue
					}
					failed++
					for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
						for _, secret := range []string{planted, plantedKey, strings.TrimSuffix(plantedKey, "=")} {
							if strings.Contains(text, secret) {
								t.Errorf("error holds a secret: %s", text)
							}
						}
					}
				}
				if failed == 0 {
					t.Errorf("%s: no request failed", loc)
				}
			}
		})
	}
}

// A conditional delete removes the object only while it is the version
// whose ETag it was given: an object written again since stays, which is
// what keeps an object re-uploaded after a listing from an orphan
// cleanup that listed the old one.
func TestDeleteIfMatch(t *testing.T) {
	ctx := context.Background()
	a := startAzurite(t)
	s := storage.Open(a.Properties())
	cd, ok := s.(storage.ConditionalDeleter)
	if !ok {
		t.Fatalf("%T cannot delete conditionally", s)
	}
	cred, err := azblob.NewSharedKeyCredential(a.Account(), a.Key())
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(a.Endpoint()+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	loc := storage.Join(a.Location(container, "cond"), "data", "0.parquet")
	put := func(body string) string {
		t.Helper()
		if err := s.Put(ctx, loc, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		props, err := client.ServiceClient().NewContainerClient(container).NewBlobClient("cond/data/0.parquet").GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(*props.ETag)
	}
	listed := put("as listed")
	again := put("uploaded again")
	if listed == again {
		t.Fatalf("two versions share the ETag %s", listed)
	}
	if err := cd.DeleteIfMatch(ctx, loc, listed); !errors.Is(err, storage.ErrChanged) {
		t.Fatalf("delete of a changed object: %v, want ErrChanged", err)
	}
	if got := get(t, s, loc); string(got) != "uploaded again" {
		t.Fatalf("object after a refused delete: %q", got)
	}
	if err := cd.DeleteIfMatch(ctx, loc, again); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, loc); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("object still there after its delete: %v", err)
	}
	// A missing object: nothing to delete, nothing deleted (Azurite
	// answers 412, as for a changed one).
	if err := cd.DeleteIfMatch(ctx, loc, again); err != nil && !errors.Is(err, storage.ErrChanged) {
		t.Fatalf("delete of a missing object: %v", err)
	}
	if err := cd.DeleteIfMatch(ctx, "file:///tmp/x.parquet", again); err == nil {
		t.Fatal("a file location took a conditional delete")
	}
}
