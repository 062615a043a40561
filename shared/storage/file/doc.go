// Package file stores objects as files on a local or mounted file system:
// the embedded default warehouse of the ingestor, whose table locations are
// file:///abs/path URIs.
//
// A Put writes a hidden temporary file beside the destination, fsyncs it,
// renames it over the destination and fsyncs the directory, so the object
// is replaced whole or not at all, and survives a power loss once Put
// returns. A crash in the middle leaves at most a ".tmp-" file, which no
// table refers to.
package file
