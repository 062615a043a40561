package storage

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/icewal/ingestor/shared/storage/azure"
	"github.com/icewal/ingestor/shared/storage/file"
)

// ErrNotFound is what a Get of a missing object wraps. It is fs.ErrNotExist,
// so the leaf packages need not import this one.
var ErrNotFound = fs.ErrNotExist

// ErrChanged is what DeleteIfMatch wraps when the object was written again
// since its ETag was read.
var ErrChanged = azure.ErrChanged

// Store reads and writes whole objects by location.
type Store interface {
	// Put stores size bytes read from r at location, replacing any object
	// of that name whole.
	Put(ctx context.Context, location string, r io.Reader, size int64) error
	// Get opens the object at location; a missing object wraps ErrNotFound.
	Get(ctx context.Context, location string) (io.ReadCloser, error)
	// Delete removes the object at location; a missing object is not an error.
	Delete(ctx context.Context, location string) error
	// Stat returns the size and last modification time of the object at
	// location without reading it (one HEAD request); a missing object
	// wraps ErrNotFound.
	Stat(ctx context.Context, location string) (Info, error)
}

// Info is what Stat tells of an object.
type Info struct {
	// Size is the object's size in bytes.
	Size int64
	// ModTime is when the object was last written, by the store's clock:
	// the time the table's orphan cleanup compares with its margin.
	ModTime time.Time
}

// Open returns a Store for every location scheme the ingestor writes to,
// with Azure credentials from the catalog properties props. Nothing is
// dialled until the first request.
func Open(props map[string]string) Store {
	return &router{file: file.New(), azure: azure.New(props)}
}

// Join appends path elements to a location with single slashes.
func Join(location string, elem ...string) string {
	out := strings.TrimRight(location, "/")
	for _, e := range elem {
		out += "/" + strings.Trim(e, "/")
	}
	return out
}

// router sends each location to the backend of its scheme.
type router struct {
	file  *file.Store
	azure *azure.Store
}

// leaf is what each backend package provides; its Stat returns plain
// values, since the leaves do not import this package.
type leaf interface {
	Put(ctx context.Context, location string, r io.Reader, size int64) error
	Get(ctx context.Context, location string) (io.ReadCloser, error)
	Delete(ctx context.Context, location string) error
	Stat(ctx context.Context, location string) (size int64, modTime time.Time, err error)
}

func (r *router) backend(location string) (leaf, error) {
	if strings.HasPrefix(location, "/") {
		return r.file, nil
	}
	scheme, _, ok := strings.Cut(location, "://")
	if !ok {
		return nil, fmt.Errorf("location %q: want a URI such as file:///path or abfs://container@account.dfs.core.windows.net/path", location)
	}
	switch strings.ToLower(scheme) {
	case "file":
		return r.file, nil
	case "abfs", "abfss", "wasb", "wasbs":
		return r.azure, nil
	}
	return nil, fmt.Errorf("location %q: unsupported storage scheme %q (supported: file, abfs, abfss, wasb, wasbs)", location, scheme)
}

func (r *router) Put(ctx context.Context, location string, rd io.Reader, size int64) error {
	b, err := r.backend(location)
	if err != nil {
		return err
	}
	return b.Put(ctx, location, rd, size)
}

func (r *router) Get(ctx context.Context, location string) (io.ReadCloser, error) {
	b, err := r.backend(location)
	if err != nil {
		return nil, err
	}
	return b.Get(ctx, location)
}

func (r *router) Delete(ctx context.Context, location string) error {
	b, err := r.backend(location)
	if err != nil {
		return err
	}
	return b.Delete(ctx, location)
}

// DeleteIfMatch removes the object at location only while its ETag is
// etag, as one conditional request; an object written again since wraps
// ErrChanged and stays. Only Azure locations have ETags; any other is an
// error.
func (r *router) DeleteIfMatch(ctx context.Context, location, etag string) error {
	b, err := r.backend(location)
	if err != nil {
		return err
	}
	if b != leaf(r.azure) {
		return fmt.Errorf("conditional delete of %s: the store has no ETags", location)
	}
	return r.azure.DeleteIfMatch(ctx, location, etag)
}

// ConditionalDeleter deletes an object only while it is the one an ETag
// names; the Store that Open returns is one.
type ConditionalDeleter interface {
	DeleteIfMatch(ctx context.Context, location, etag string) error
}

func (r *router) Stat(ctx context.Context, location string) (Info, error) {
	b, err := r.backend(location)
	if err != nil {
		return Info{}, err
	}
	size, mod, err := b.Stat(ctx, location)
	return Info{Size: size, ModTime: mod}, err
}

// CloseIdleConnections closes the idle HTTP connections of the Azure
// backend. The store stays usable.
func (r *router) CloseIdleConnections() { r.azure.CloseIdleConnections() }
