// Package rolestatus is what each process of the ingestor tells of itself:
// one envelope, Status (the role, its PID, its state, and when over HTTP
// the time of the answer), around one typed body per process: Supervisor,
// Consumer, Uploader, Committer and Maintainer.
//
// Each role fills its body from its own metrics and bookkeeping; the
// envelope reaches `ingestor status` on the role's /status endpoint and the
// supervisor over RPC (shared/rpc), always as the same JSON object. The
// JSON keys are the contract between a role and whoever reads it: a body's
// "details" object is decoded by the envelope's role, so the reader needs
// no lookup by string key.
package rolestatus
