// Package redact removes the configuration's secrets from text that leaves
// a process for a person or a script: the committer's last commit error in
// its status, the maintainer's step errors, and everything `ingestor status`
// prints. It sits beside the
// record path, not on it: it only rewrites text about it.
package redact
