package walfile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ledgerPrefix starts the metadata of every offset commit the consumer
// makes.
const ledgerPrefix = "ingestor-ledger/1"

// maxLedgerEntries bounds the ledger: WAL directories that owned the
// partition most recently, well within a broker's 4 KiB metadata limit.
const maxLedgerEntries = 32

// Ledger is carried in the metadata of each partition's committed offset:
// for every WAL directory that recently committed the partition, the
// offset its own last commit reached. A ready file is committed only if
// its own directory's entry is past the file's last offset: a commit made
// by another instance, which read the same records again after this one
// died before committing, does not count. Each new owner carries the
// entries of the others forward.
type Ledger map[string]int64

// ParseLedger reads commit metadata; ok is false for metadata that is not
// a ledger (commits made without one).
func ParseLedger(meta string) (l Ledger, ok bool) {
	rest, found := strings.CutPrefix(meta, ledgerPrefix)
	if !found {
		return nil, false
	}
	l = Ledger{}
	for _, f := range strings.Fields(rest) {
		id, off, found := strings.Cut(f, "@")
		if !found {
			continue
		}
		n, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			continue
		}
		l[id] = n
	}
	return l, true
}

// With returns the metadata of a commit by WAL directory id at offset:
// its entry set, the others kept, the oldest dropped beyond the bound.
func (l Ledger) With(id string, offset int64) string {
	type entry struct {
		id  string
		off int64
	}
	entries := []entry{{id, offset}}
	for k, v := range l {
		if k != id {
			entries = append(entries, entry{k, v})
		}
	}
	sort.SliceStable(entries[1:], func(i, j int) bool { return entries[1+i].off > entries[1+j].off })
	if len(entries) > maxLedgerEntries {
		entries = entries[:maxLedgerEntries]
	}
	var b strings.Builder
	b.WriteString(ledgerPrefix)
	for _, e := range entries {
		fmt.Fprintf(&b, " %s@%d", e.id, e.off)
	}
	return b.String()
}

// RowsSuffix marks the ledger entries of upsert datasets that carry, for
// a WAL directory, the last Kafka offset of a row it wrote into a ready
// file of the partition, rather than its committed offset: the offset an
// upsert table must hold before another directory's later segments of the
// partition are appended (committer/upsert.go). CommittedFor never
// matches them, since no WAL id ends with the suffix.
const RowsSuffix = ".rows"

// CommittedFor returns the offset up to which WAL directory id's own
// offset commits reached, given the partition's committed offset and its
// metadata; -1 when none of them did. A commit without a ledger counts as
// it is.
func CommittedFor(id string, at int64, meta string) int64 {
	l, ok := ParseLedger(meta)
	if !ok {
		return at
	}
	if off, ok := l[id]; ok {
		return min(off, at)
	}
	return -1
}
