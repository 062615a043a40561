package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// tmpPrefix starts the name of a file being written by Put.
const tmpPrefix = ".tmp-"

// Store keeps objects in the local file system.
type Store struct{}

// New returns a file Store.
func New() *Store { return &Store{} }

// Path returns the absolute file path of a file:///abs/path location or a
// bare absolute path.
func Path(location string) (string, error) {
	p := location
	if !strings.HasPrefix(location, "/") {
		u, err := url.Parse(location)
		if err != nil {
			return "", fmt.Errorf("location %q: %w", location, err)
		}
		if !strings.EqualFold(u.Scheme, "file") {
			return "", fmt.Errorf("location %q: not a file:// URI", location)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("location %q: file URI names host %q, want file:///abs/path", location, u.Host)
		}
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("location %q: path is not absolute", location)
	}
	return filepath.Clean(p), nil
}

// Put writes size bytes of r to location through a temporary file and a
// rename, replacing any file there whole.
func (s *Store) Put(ctx context.Context, location string, r io.Reader, size int64) error {
	p, err := Path(location)
	if err != nil {
		return err
	}
	if err := put(ctx, p, r, size); err != nil {
		return fmt.Errorf("put %s: %w", location, err)
	}
	return nil
}

func put(ctx context.Context, p string, r io.Reader, size int64) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, tmpPrefix+uuid.NewString()+"-"+filepath.Base(p))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// Until the rename, the destination is untouched; on any error the
	// temporary file goes and the old object (if any) stays.
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err != nil {
		return fail(err)
	}
	if size >= 0 && n != size {
		return fail(fmt.Errorf("read %d bytes, want %d", n, size))
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable only once the directory is synced.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Get opens the file at location. A missing file wraps fs.ErrNotExist.
func (s *Store) Get(ctx context.Context, location string) (io.ReadCloser, error) {
	p, err := Path(location)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", location, err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", location, err)
	}
	return f, nil
}

// Delete removes the file at location; a missing file is not an error.
func (s *Store) Delete(ctx context.Context, location string) error {
	p, err := Path(location)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", location, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", location, err)
	}
	return nil
}

// Stat returns the size and modification time of the file at location. A
// missing file wraps fs.ErrNotExist.
func (s *Store) Stat(ctx context.Context, location string) (int64, time.Time, error) {
	p, err := Path(location)
	if err != nil {
		return 0, time.Time{}, err
	}
	if err := ctx.Err(); err != nil {
		return 0, time.Time{}, fmt.Errorf("stat %s: %w", location, err)
	}
	info, err := os.Stat(p)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stat %s: %w", location, err)
	}
	if !info.Mode().IsRegular() {
		return 0, time.Time{}, fmt.Errorf("stat %s: not a regular file", location)
	}
	return info.Size(), info.ModTime(), nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
