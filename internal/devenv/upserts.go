package devenv

import (
	"fmt"
	"strconv"
	"time"

	"github.com/icewal/ingestor/shared/config"
)

// The operations of an upsert stream, the values of ColumnOp: Debezium's
// letters, which deleteWhen matches as it would a change stream's.
const (
	OpInsert = "c"
	OpUpdate = "u"
	OpDelete = "d"
)

// The columns UpsertShape adds to a shape.
const (
	// ColumnOp holds the event's operation (OpInsert, OpUpdate,
	// OpDelete), an optional string.
	ColumnOp = "op"
	// ColumnVersion holds the seq of the event that wrote the row, a
	// long: the scorer tells a key's last version from a stale one by it.
	ColumnVersion = "version"
)

// deleteShare is the share of the updates that delete their key.
const deleteShare = 0.1

// Upserts plans an upsert stream over event numbers: event seq either
// inserts a new key (the key is seq itself) or, with probability Ratio,
// updates the key of an earlier event drawn uniformly, and a tenth of
// those updates delete the key instead. A later update of a deleted key
// writes it again. The plan is a pure function of seq, so the producer and
// the scorer agree on it without sharing state.
type Upserts struct {
	// Ratio is the share of the events that update or delete an earlier
	// key, in [0, 1).
	Ratio float64
	// Tombstones sends every other delete as a Kafka tombstone (the key
	// and a null value) instead of a value whose op is OpDelete.
	Tombstones bool
}

// NewUpserts returns the plan of ratio, checked.
func NewUpserts(ratio float64, tombstones bool) (*Upserts, error) {
	if !(ratio >= 0 && ratio < 1) {
		return nil, fmt.Errorf("upserts: want a share of the events in [0, 1), got %g", ratio)
	}
	return &Upserts{Ratio: ratio, Tombstones: tombstones}, nil
}

// unit returns a number in [0, 1) drawn from seq and salt.
func unit(seq int64, salt uint64) float64 {
	return float64(splitmix(uint64(seq)^salt)>>11) / (1 << 53)
}

// updates tells whether event seq changes an earlier key.
func (u *Upserts) updates(seq int64) bool {
	return seq > 0 && unit(seq, 0x7570736572740a) < u.Ratio
}

// Plan returns the key event seq writes (the seq of the event that
// inserted it), its operation, and whether it is sent as a tombstone.
func (u *Upserts) Plan(seq int64) (key int64, op string, tombstone bool) {
	if !u.updates(seq) {
		return seq, OpInsert, false
	}
	op = OpUpdate
	if unit(seq, 0x64656c657465) < deleteShare {
		op = OpDelete
		tombstone = u.Tombstones && splitmix(uint64(seq))&1 == 1
	}
	// The earlier event's key: followed back through the updates, each
	// of which drew an event before it, to the insert.
	key = seq
	for u.updates(key) || key == seq {
		key = int64(splitmix(uint64(key)^0x6b6579) % uint64(key))
	}
	return key, op, tombstone
}

// UpsertShape returns base with the columns ColumnOp and ColumnVersion
// added, each event carrying its operation in plan and its seq: the
// shape of `ingestor bench --upserts`. The Avro and Protobuf writers
// (shapeenc) encode the two columns as any other.
func UpsertShape(base Shape, plan *Upserts) Shape {
	s := base
	s.Columns = append(append([]config.Column(nil), base.Columns...),
		config.Column{Name: ColumnOp, Type: "string"},
		config.Column{Name: ColumnVersion, Type: "long", Required: true})
	s.Mapping = make(map[string]string, len(base.Mapping)+2)
	for k, v := range base.Mapping {
		s.Mapping[k] = v
	}
	s.Mapping[ColumnOp], s.Mapping[ColumnVersion] = ColumnOp, ColumnVersion
	s.appendEvent = func(dst []byte, id, tenant string, seq int64, at time.Time) []byte {
		dst = base.appendEvent(dst, id, tenant, seq, at)
		// Every shape's event is one JSON object: its closing brace
		// makes way for the two fields.
		dst = dst[:len(dst)-1]
		_, op, _ := plan.Plan(seq)
		dst = append(dst, `,"op":"`...)
		dst = append(dst, op...)
		dst = append(dst, `","version":`...)
		dst = strconv.AppendInt(dst, seq, 10)
		return append(dst, '}')
	}
	return s
}
