package consumer

import (
	"strings"
	"sync"

	"github.com/icewal/ingestor/shared/walfile"
)

// upsertOrder keeps an upsert dataset's appends of one Kafka partition in
// offset order across WAL directories. Within one directory the committer
// appends a partition's segments in order. Across directories (pods), a
// rebalance hands a partition to a new owner while the old one may still
// hold segments of it not appended yet, its committer down or its pod
// restarting: were the new owner's later rows appended first, the old
// rows would then replace them.
//
// So each offset commit carries, in the commit ledger, besides this
// directory's committed offset, the last offset of a row it wrote into a
// ready file of the partition (walfile.RowsSuffix). A new owner reads the
// ledger when the partition is assigned, and every segment it writes of
// the partition names the other directories' last row offset in its
// footer (walfile.MetaUpsertAfter); the committer appends the segment only
// once the table holds that offset. A drop or a transaction marker after
// the old owner's last row does not make the new owner wait: the ledger
// names a row, not the committed offset.
type upsertOrder struct {
	mu sync.Mutex
	// last is, by partition, the last row offset this directory wrote
	// into a ready file.
	last map[int32]int64
	// after is, by partition, the last row offset other directories
	// wrote before this one was assigned the partition.
	after map[int32]int64
}

// assigned takes a newly assigned partition's ledger: this directory's
// own last row, if it had the partition before, and the others'.
func (o *upsertOrder) assigned(p int32, led walfile.Ledger, own string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last, o.after = map[int32]int64{}, map[int32]int64{}
	}
	// What the ledger says this directory committed is what counts: a
	// file rolled but never committed before the partition was lost is
	// written again by whoever reads its records next.
	delete(o.last, p)
	after := int64(-1)
	for id, off := range led {
		switch {
		case id == own+walfile.RowsSuffix:
			o.last[p] = off
		case strings.HasSuffix(id, walfile.RowsSuffix):
			after = max(after, off)
		}
	}
	o.after[p] = after
}

// afterOf is the offset a new segment of p must wait for; -1 for none.
func (o *upsertOrder) afterOf(p int32) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.after[p]; ok {
		return v
	}
	return -1
}

// wrote notes a ready file: its last row is this directory's last of the
// partition.
func (o *upsertOrder) wrote(n walfile.Name) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last, o.after = map[int32]int64{}, map[int32]int64{}
	}
	if v, ok := o.last[n.Partition]; !ok || n.End > v {
		o.last[n.Partition] = n.End
	}
}

// lastOf is the last row offset of p this directory wrote, if any.
func (o *upsertOrder) lastOf(p int32) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.last[p]
	return v, ok
}
