package devenv

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// Blob is one object found by ListBlobs: its location (as a table records
// it, abfs://container@account.../name) and its size.
type Blob struct {
	Location string
	Size     int64
}

// ListBlobs lists the blobs under location, an abfs:// URI of this
// instance (a table's metadata directory, say): the prefix of their names.
func (a *Azurite) ListBlobs(ctx context.Context, location string) ([]Blob, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "abfs" || u.User == nil {
		return nil, fmt.Errorf("list %s: not an abfs://container@account/path location", location)
	}
	container := u.User.Username()
	prefix := strings.TrimPrefix(u.Path, "/")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	opts := &azblob.ClientOptions{}
	opts.Transport = &http.Client{Transport: tr}
	c, err := azblob.NewClientFromConnectionString(a.ConnectionString(), opts)
	if err != nil {
		return nil, fmt.Errorf("azurite client: %w", err)
	}
	base := strings.TrimSuffix(location, u.Path) + "/"
	var out []Blob
	pager := c.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", location, err)
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			b := Blob{Location: base + *item.Name}
			if item.Properties != nil && item.Properties.ContentLength != nil {
				b.Size = *item.Properties.ContentLength
			}
			out = append(out, b)
		}
	}
	return out, nil
}
