package tables

import (
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// TargetFileSizeBytes is the data file size the ingestor's tables aim
// for: iceberg-go's own default, 512 MiB, takes a streaming table days to
// reach in one partition, and compaction toward it would leave every
// file "small" and rewrite it level after level meanwhile.
const TargetFileSizeBytes = 128 << 20

// UpkeepProperties are the table properties the ingestor sets on the
// tables it creates, unless the create block sets them: iceberg-go honours
// them at every commit, so the metadata directory and the current
// snapshot's manifest list stay bounded without a separate job.
//
//   - write.metadata.delete-after-commit.enabled: each commit deletes the
//     metadata.json versions beyond write.metadata.previous-versions-max;
//     without it every version (one per commit) stays forever.
//   - write.metadata.previous-versions-max: 20 versions, minutes of history
//     at the default commit interval, for readers still on an old version.
//   - commit.manifest-merge.enabled with commit.manifest.min-count-to-merge:
//     an append merges the current snapshot's small manifests once 50 pile
//     up, instead of adding one manifest per commit forever.
//   - write.target-file-size-bytes: TargetFileSizeBytes, the size the
//     maintainer's compaction packs toward, stated on the table so that
//     other engines (a Spark compaction, a reader's planner) agree with it.
//
// docs/operations.md ("Table upkeep") tells what the maintainer expects of
// tables the ingestor did not create.
var UpkeepProperties = map[string]string{
	table.MetadataDeleteAfterCommitEnabledKey: "true",
	table.MetadataPreviousVersionsMaxKey:      "20",
	table.ManifestMergeEnabledKey:             "true",
	table.ManifestMinMergeCountKey:            "50",
	table.WriteTargetFileSizeBytesKey:         strconv.Itoa(TargetFileSizeBytes),
}
