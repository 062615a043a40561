package inspect

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/walfile"
)

// Getter reads an object by location; shared/storage's Store is one.
type Getter interface {
	Get(ctx context.Context, location string) (io.ReadCloser, error)
}

// BloomAnswer is what a sidecar says about one value.
type BloomAnswer struct {
	// MayContain is false when the value is surely not in the data file.
	MayContain bool
	// Sidecar is the location read.
	Sidecar string
	// Column is the column the sidecar covers.
	Column string
	// Count, Bits and Hashes describe the filter.
	Count  uint64
	Bits   uint64
	Hashes int
}

// SidecarLocation returns where the bloom-filter sidecar of column lives
// for file. file is either the sidecar itself, returned unchanged, or the
// data file <uuid>.parquet, whose sidecars the uploader stores beside it as
// <uuid>.bloom.<column>, with every byte of the column name other than
// letters, digits, '_', '-' and '.' written ~XX in upper-case hex.
func SidecarLocation(file, column string) string {
	base, ok := strings.CutSuffix(file, walfile.SegmentExt)
	if !ok {
		return file
	}
	// base is the data file's location without its extension: the
	// directory and the UUID the uploader named both objects after.
	return bloom.SidecarName(base, column)
}

// LookupBloom reads the sidecar of column for file (see SidecarLocation)
// and answers whether value, written as text for a column of Iceberg type
// typ (bloom.QueryValue), may be in the data file. A location with a
// scheme (file://, abfs://, ...) is read through store; anything else is a
// local path. A sidecar for another column than column is an error, not an
// answer: asking the wrong filter would give a wrong "no".
func LookupBloom(ctx context.Context, store Getter, file, column, typ, value string) (BloomAnswer, error) {
	loc := SidecarLocation(file, column)
	key, err := bloom.QueryValue(typ, value)
	if err != nil {
		return BloomAnswer{}, err
	}
	rc, err := openLocation(ctx, store, loc)
	if err != nil {
		return BloomAnswer{}, err
	}
	defer rc.Close()
	f, err := bloom.Read(rc)
	if err != nil {
		return BloomAnswer{}, fmt.Errorf("read bloom sidecar %s: %w", loc, err)
	}
	if f.Column != column {
		return BloomAnswer{}, fmt.Errorf("bloom sidecar %s covers column %q, not %q", loc, f.Column, column)
	}
	return BloomAnswer{
		MayContain: f.MayContain(key),
		Sidecar:    loc, Column: f.Column,
		Count: f.Count(), Bits: f.Bits(), Hashes: f.Hashes(),
	}, nil
}

// openLocation opens a local path, or a URI through store.
func openLocation(ctx context.Context, store Getter, loc string) (io.ReadCloser, error) {
	if !strings.Contains(loc, "://") {
		f, err := os.Open(loc)
		if err != nil {
			return nil, fmt.Errorf("open bloom sidecar: %w", err)
		}
		return f, nil
	}
	if store == nil {
		return nil, fmt.Errorf("open bloom sidecar %s: no storage to read it from", loc)
	}
	rc, err := store.Get(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("bloom sidecar: %w", err) // the store's error names the location
	}
	return rc, nil
}
