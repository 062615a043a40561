// Package redact removes the configuration's secrets from text that leaves
// a process for a person or a script: the catalog's and the blob store's
// errors, the committer's last commit error in its status, the
// maintainer's step errors, and everything `ingestor status` prints. It
// sits beside the record path, not on it: it only rewrites text about it.
//
// There is one rule of what is secret (Properties) and one kind of masked
// error (Error, Wrap): it unwraps to the sentinels callers branch on, never
// to the error it was made from, whose text holds the secrets.
package redact
