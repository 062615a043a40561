// Package deploy holds what runs the ingestor outside a developer's
// machine, and the tests that keep it in step with the code. It has no code
// of its own in the record path: the ingestor never imports it.
//
//   - Dockerfile: a static, cgo-free build of cmd/ingestor on a distroless
//     base, running as a non-root user, with the WAL at /var/lib/ingestor/wal.
//   - kubernetes/: two layouts of the same StatefulSet, each with a volume
//     claim per pod for the WAL. process-tree/ runs `ingestor run` (the
//     supervisor and its three child processes) in one container;
//     sidecars/ runs one role per container, the uploader and the
//     committer as native sidecars that stop after the consumer. common/
//     holds the ConfigMap with ingestor.yaml and the PodDisruptionBudget;
//     common/secret.example.yaml shows the Secret of credentials.
//   - helm/ingestor/: a Helm chart of both layouts, with the configuration,
//     the Secret (existing or created), resources, the WAL claim and the
//     metrics ports as values. With its defaults and the release name
//     ingestor it renders the same objects as kubernetes/.
//   - grafana/ingestor-dashboard.json and prometheus/alerts.yaml: a
//     dashboard and alert rules on the metrics the processes export.
//
// docs/deploy.md explains the layouts, the probes, the drain budget and
// scaling.
//
// The tests check these files offline, the way a cluster and a Prometheus
// would read them: every manifest decodes strictly (unknown, duplicate or
// miscased fields fail) into the typed Kubernetes API structs; the
// configuration in the ConfigMap passes shared/config.Parse; the pod specs
// agree with it (grace period above the drain budget, probes on the ports
// the metrics addresses give, the WAL claim mounted at ingestion.wal.dir,
// Secret keys that exist, a termination order that follows the record
// path); the Helm chart, rendered with Helm's Go library for both layouts,
// decodes strictly, passes the same checks, and renders the plain
// manifests with its default values; the Dockerfile's build command builds a static binary; and every
// PromQL expression parses and names only metrics and labels that the Go
// sources register.
package deploy
