// Package status is `ingestor status`: what an operator sees of a running
// ingestor. It sits beside the record path and reads it from outside,
// without a lock or a write: the Prometheus endpoint of each process
// (supervisor, consumer, uploader, committer, at the addresses
// shared/metrics.RoleAddress gives), the JSON each role serves on /status
// (the envelope of shared/rolestatus around the typed body its Status
// method fills, through Handler), and the WAL directory (file names
// and sizes by state, and the volume's use).
//
// Collect builds a Report: per dataset the consumer lag per partition,
// events per second (from two scrapes of the consumer's record counter),
// dropped records by reason, open segments, WAL files and bytes by state,
// whether consumption is paused, the time of the last commit and the last
// commit error; per process whether it answers, and the supervisor's view
// of each role (up, restarts). A process that does not answer is shown as
// down, never as an error. Render writes the Report for a person, and its
// JSON form is for scripts; Watch redraws it like top.
//
// Nothing secret leaves: every text that comes from a role, and the
// finished output, pass through shared/redact with the configuration's
// secrets.
package status
