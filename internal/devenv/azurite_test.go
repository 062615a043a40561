package devenv

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

func newBlobClient(t testing.TB, a *Azurite) *azblob.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	opts := &azblob.ClientOptions{}
	opts.Transport = &http.Client{Transport: tr}
	opts.Retry = policy.RetryOptions{MaxRetries: -1} // no retries: an outage must show at once
	c, err := azblob.NewClientFromConnectionString(a.ConnectionString(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAzuriteStopStart stores a blob, stops Azurite (requests fail), starts
// it again on the same port and reads the blob back.
func TestAzuriteStopStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	a, err := StartAzurite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })

	if !strings.HasPrefix(a.Endpoint(), "http://127.0.0.1:") || a.Account() != "devstoreaccount1" || a.Key() == "" {
		t.Fatalf("endpoint %q account %q", a.Endpoint(), a.Account())
	}
	if err := a.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatalf("second create of the same container: %v", err)
	}
	c := newBlobClient(t, a)
	want := []byte("hello azurite")
	if _, err := c.UploadBuffer(ctx, "warehouse", "a/b.txt", want, nil); err != nil {
		t.Fatal(err)
	}

	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if _, err := c.DownloadStream(ctx, "warehouse", "a/b.txt", nil); err == nil {
		t.Fatal("download from a stopped azurite succeeded")
	}

	port := a.Port()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err == nil {
		t.Fatal("starting a running azurite succeeded")
	}
	if a.Port() != port {
		t.Fatalf("port changed from %d to %d", port, a.Port())
	}
	resp, err := c.DownloadStream(ctx, "warehouse", "a/b.txt", nil)
	if err != nil {
		t.Fatalf("blob after restart: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if a.Location("warehouse", "/x/y") != "abfs://warehouse@devstoreaccount1.dfs.core.windows.net/x/y" {
		t.Fatalf("location %q", a.Location("warehouse", "/x/y"))
	}
}

func TestAzuriteMissingBinary(t *testing.T) {
	t.Setenv("AZURITE_BIN", filepath.Join(t.TempDir(), "no-such-azurite"))
	_, err := StartAzurite(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("error %v does not tell to run make deps", err)
	}
}
