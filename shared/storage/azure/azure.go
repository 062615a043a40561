package azure

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/google/uuid"
	"github.com/icewal/ingestor/shared/redact"
	"golang.org/x/sync/errgroup"
)

// Upload sizes. An object up to singlePutMax goes in one request; a larger
// one in blocks of blockSize, blockConcurrency at a time. Read from a file
// (an io.ReaderAt), each block is a section of the file streamed into its
// request, not a copy in memory; from a plain reader, the SDK buffers
// streamBlockSize × streamConcurrency bytes.
const (
	singlePutMax      = 8 << 20
	blockSize         = 8 << 20
	blockConcurrency  = 4
	streamBlockSize   = 4 << 20
	streamConcurrency = 2
)

// Store keeps objects in Azure Blob Storage. It is safe for concurrent use.
type Store struct {
	props     map[string]string
	red       *redact.Redactor // masks the secrets of props in errors
	transport *http.Transport

	mu         sync.Mutex
	containers map[string]*container.Client // by host and container
	cred       azcore.TokenCredential
}

// New returns a Store that authenticates with the adls.* catalog
// properties in props. Clients are made at first use.
func New(props map[string]string) *Store {
	p := make(map[string]string, len(props))
	for k, v := range props {
		p[k] = v
	}
	return &Store{
		props:      p,
		red:        redact.Properties(p),
		transport:  http.DefaultTransport.(*http.Transport).Clone(),
		containers: map[string]*container.Client{},
	}
}

// CloseIdleConnections closes idle HTTP connections; the store stays usable.
func (s *Store) CloseIdleConnections() { s.transport.CloseIdleConnections() }

// blob returns the block blob client of a location.
func (s *Store) blob(location string) (*blockblob.Client, error) {
	l, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := l.Host + "/" + l.Container
	c, ok := s.containers[key]
	if !ok {
		if c, err = s.newContainerClient(l); err != nil {
			return nil, fmt.Errorf("azure client for %s: %s", location, s.red.String(err.Error()))
		}
		s.containers[key] = c
	}
	return c.NewBlockBlobClient(l.Path), nil
}

// Put uploads size bytes of r to location, replacing any blob there.
// When r is also an io.ReaderAt and an io.Seeker (an *os.File), the bytes
// from its current position are read in sections, never copied to memory.
func (s *Store) Put(ctx context.Context, location string, r io.Reader, size int64) error {
	bb, err := s.blob(location)
	if err != nil {
		return err
	}
	return s.wrap("put", location, upload(ctx, bb, r, size))
}

func upload(ctx context.Context, bb *blockblob.Client, r io.Reader, size int64) error {
	ra, isReaderAt := r.(io.ReaderAt)
	sk, isSeeker := r.(io.Seeker)
	if !isReaderAt || !isSeeker || size < 0 {
		return uploadStream(ctx, bb, r, size)
	}
	base, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if size <= singlePutMax {
		// One request; the SDK rewinds the section to retry it.
		sum, err := sectionMD5(ra, base, size)
		if err != nil {
			return err
		}
		_, err = bb.Upload(ctx, streaming.NopCloser(io.NewSectionReader(ra, base, size)),
			&blockblob.UploadOptions{TransactionalValidation: sum})
		return err
	}
	// Blocks are staged under IDs unique to this attempt and only the
	// commit makes them the blob's content: a failed attempt leaves the
	// previous blob as it was, and Azure discards uncommitted blocks.
	attempt := uuid.New()
	n := int((size + blockSize - 1) / blockSize)
	ids := make([]string, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blockConcurrency)
	for i := range n {
		ids[i] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%08d", attempt, i))
		off := int64(i) * blockSize
		length := min(blockSize, size-off)
		g.Go(func() error {
			sum, err := sectionMD5(ra, base+off, length)
			if err != nil {
				return fmt.Errorf("stage block %d of %d: %w", i+1, n, err)
			}
			body := streaming.NopCloser(io.NewSectionReader(ra, base+off, length))
			if _, err := bb.StageBlock(gctx, ids[i], body, &blockblob.StageBlockOptions{TransactionalValidation: sum}); err != nil {
				return fmt.Errorf("stage block %d of %d: %w", i+1, n, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err = bb.CommitBlockList(ctx, ids, nil)
	return err
}

// sectionMD5 is the MD5 of a section of ra, sent as the Content-MD5 of
// the request that carries it: the storage service computes the MD5 of
// what it received and refuses the request (400 Md5Mismatch, which the
// uploader retries) when the two differ, so a body changed on its way (a
// proxy, a NIC, a second read of the file that differs from the first)
// is never stored. Azure checks Content-MD5 on Put Blob and Put Block, and
// so does Azurite (Md5Mismatch; it checks x-ms-content-crc64 too,
// Crc64Mismatch, measured with a proxy that flips a byte). MD5 rather
// than azblob's CRC64 validation, which reads each body into memory
// first (8 MiB a block, four at a time): the hash here is a streamed
// first read of the section, and the upload reads it again from the page
// cache.
func sectionMD5(ra io.ReaderAt, off, n int64) (blob.TransferValidationTypeMD5, error) {
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(ra, off, n)); err != nil {
		return nil, fmt.Errorf("hash upload body: %w", err)
	}
	return h.Sum(nil), nil
}

// uploadStream uploads from a reader that cannot be read at offsets.
func uploadStream(ctx context.Context, bb *blockblob.Client, r io.Reader, size int64) error {
	cr := &countingReader{r: r}
	if size >= 0 {
		cr.r = io.LimitReader(r, size)
	}
	_, err := bb.UploadStream(ctx, cr, &blockblob.UploadStreamOptions{BlockSize: streamBlockSize, Concurrency: streamConcurrency})
	if err != nil {
		return err
	}
	if size >= 0 && cr.n != size {
		// The short object is stored; the caller's retry replaces it.
		return fmt.Errorf("read %d bytes, want %d", cr.n, size)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Get opens the blob at location for reading. A missing blob or container
// wraps fs.ErrNotExist.
func (s *Store) Get(ctx context.Context, location string) (io.ReadCloser, error) {
	bb, err := s.blob(location)
	if err != nil {
		return nil, err
	}
	resp, err := bb.DownloadStream(ctx, nil)
	if err != nil {
		return nil, s.wrap("get", location, err)
	}
	return &body{rc: resp.Body, s: s, location: location}, nil
}

// body clears secrets from the errors of a download in progress.
type body struct {
	rc       io.ReadCloser
	s        *Store
	location string
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.s.wrap("read", b.location, err)
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// Delete removes the blob at location; a missing blob is not an error.
func (s *Store) Delete(ctx context.Context, location string) error {
	bb, err := s.blob(location)
	if err != nil {
		return err
	}
	if _, err := bb.Delete(ctx, nil); err != nil && !isNotFound(err) {
		return s.wrap("delete", location, err)
	}
	return nil
}

// ErrChanged is what DeleteIfMatch wraps when the blob is no longer the
// one its ETag names: it was written again since it was listed.
var ErrChanged = errors.New("object changed since it was listed")

// DeleteIfMatch removes the blob at location only while its ETag is
// etag, in one request (If-Match): a blob written again since the ETag
// was read stays, and the error wraps ErrChanged. A missing blob is not
// an error.
func (s *Store) DeleteIfMatch(ctx context.Context, location, etag string) error {
	bb, err := s.blob(location)
	if err != nil {
		return err
	}
	tag := azcore.ETag(etag)
	_, err = bb.Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &tag},
	}})
	switch {
	case err == nil, isNotFound(err):
		return nil
	case bloberror.HasCode(err, bloberror.ConditionNotMet):
		return fmt.Errorf("azure delete %s if its ETag is %s: %w", location, etag, ErrChanged)
	}
	return s.wrap("delete", location, err)
}

// Stat returns the size and Last-Modified time of the blob at location
// from its properties (one HEAD request). A missing blob or container
// wraps fs.ErrNotExist.
func (s *Store) Stat(ctx context.Context, location string) (int64, time.Time, error) {
	bb, err := s.blob(location)
	if err != nil {
		return 0, time.Time{}, err
	}
	props, err := bb.GetProperties(ctx, nil)
	if err != nil {
		return 0, time.Time{}, s.wrap("stat", location, err)
	}
	var size int64
	if props.ContentLength != nil {
		size = *props.ContentLength
	}
	var mod time.Time
	if props.LastModified != nil {
		mod = *props.LastModified
	}
	return size, mod, nil
}
