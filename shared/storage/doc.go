// Package storage is the object storage the uploader writes WAL segments
// and their bloom-filter sidecars to, and that later steps (status,
// cleanup) read and delete from.
//
// A location is a full URI exactly as the Iceberg table records a data
// file: file:///abs/path for the embedded default warehouse (a bare
// absolute path is read the same way), or
// abfs[s]://container@account.dfs.core.windows.net/path and
// wasb[s]://container@account.blob.core.windows.net/path for Azure. Open
// routes each location by its scheme to a leaf package, shared/storage/file
// or shared/storage/azure; Azure credentials come from the same catalog
// properties (adls.*) that iceberg-go's Azure file IO reads, so one
// configuration serves the catalog and the uploader.
//
// A Put of an existing name replaces the object whole: a reader sees the
// old or the new object, never a mix. The uploader relies on that to make
// a repeated upload (after a crash before its marker) harmless. Errors are
// returned wrapped with the operation and the location, never with
// credentials; the caller decides when to retry.
package storage
