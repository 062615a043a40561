// Package tableview shows what the ingestor wrote into a dataset's
// Iceberg table, for `ingestor table describe|snapshots|files|head`.
//
// It is a reader beside the record path, never part of it: it opens the
// catalog the way the roles do (tables.OpenCatalog), loads the table but
// never creates it, and changes nothing. What it reads:
//
//   - describe: the table metadata only (schema with field IDs, partition
//     spec, sort order, properties, snapshots and the current snapshot's
//     summary totals). When the summary lacks the totals it falls back to
//     listing the current snapshot's files.
//   - snapshots: the table metadata only, including the summary fields the
//     committer records on each append (tables.SummaryDataset and
//     tables.SummaryFiles), which tell the ingestor's appends from other
//     engines' commits.
//   - files: the manifest list and manifests of the current snapshot,
//     through iceberg-go's scan planning.
//   - head: the data files themselves, through iceberg-go's scan to Arrow,
//     stopping after the rows asked for.
//
// Everything printed, errors included, goes through the configuration's
// redactor (shared/redact): a table property or a location never shows a
// credential.
package tableview
