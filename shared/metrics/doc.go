// Package metrics serves a process's own Prometheus registry.
//
// Every process of the ingestor (the supervisor and each of the consumer,
// uploader and committer roles, whether they run as children of the
// supervisor or alone as sidecar containers) has its own registry and its
// own /metrics endpoint; nothing uses the global registry. The supervisor
// listens on metrics.address (default :9400) and the roles take the next
// three ports unless metrics.roles names theirs (see RoleAddress). A role
// also answers GET /status there (a Route its command adds), which
// `ingestor status` reads beside /metrics.
//
// The endpoint is not part of the record path, but it must outlive it: the
// product specification keeps it available while the process drains, so
// Serve stops only when its context ends and callers cancel that context
// after the role's Run has returned.
package metrics
