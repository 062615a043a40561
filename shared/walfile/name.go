package walfile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// State is the stage of a WAL file in the record path.
type State int

// The states of a WAL file, in record-path order.
const (
	// Active is an open segment still being written.
	Active State = iota + 1
	// Ready is a closed, fsynced segment whose offsets are known.
	Ready
	// Uploaded is the marker that a ready segment's object is stored.
	Uploaded
)

// Name prefixes and extensions of WAL files.
const (
	ActivePrefix   = "active_"
	ReadyPrefix    = "ready_"
	UploadedPrefix = "uploaded_"
	TmpPrefix      = "tmp_"
	SegmentExt     = ".parquet"
	MarkerExt      = ".json"
)

func (s State) String() string {
	switch s {
	case Active:
		return "active"
	case Ready:
		return "ready"
	case Uploaded:
		return "uploaded"
	}
	return "unknown"
}

// Name is the parsed name of a WAL file.
type Name struct {
	State     State
	Topic     string
	Partition int32
	// Start and End are the first and last Kafka offsets held; unset for Active.
	Start, End int64
	UUID       uuid.UUID
}

// String formats the file name for the name's state.
func (n Name) String() string {
	switch n.State {
	case Active:
		return fmt.Sprintf("%s%s_%d_%s%s", ActivePrefix, n.Topic, n.Partition, n.UUID, SegmentExt)
	case Ready:
		return fmt.Sprintf("%s%s_%d_%d-%d_%s%s", ReadyPrefix, n.Topic, n.Partition, n.Start, n.End, n.UUID, SegmentExt)
	case Uploaded:
		return fmt.Sprintf("%s%s_%d_%d-%d_%s%s", UploadedPrefix, n.Topic, n.Partition, n.Start, n.End, n.UUID, MarkerExt)
	}
	return ""
}

// As returns the name of the same segment in another state.
func (n Name) As(s State) Name {
	n.State = s
	return n
}

var (
	activeRE = regexp.MustCompile(`^active_(.+)_(\d+)_([0-9a-f-]{36})\.parquet$`)
	closedRE = regexp.MustCompile(`^(ready|uploaded)_(.+)_(\d+)_(\d+)-(\d+)_([0-9a-f-]{36})\.(parquet|json)$`)
)

// Parse parses a WAL file's base name. The topic may contain underscores:
// the fields are read from the right.
func Parse(base string) (Name, error) {
	if m := activeRE.FindStringSubmatch(base); m != nil {
		p, err := strconv.ParseInt(m[2], 10, 32)
		if err != nil {
			return Name{}, fmt.Errorf("parse wal name %q: partition: %w", base, err)
		}
		u, err := uuid.Parse(m[3])
		if err != nil {
			return Name{}, fmt.Errorf("parse wal name %q: uuid: %w", base, err)
		}
		return Name{State: Active, Topic: m[1], Partition: int32(p), UUID: u}, nil
	}
	m := closedRE.FindStringSubmatch(base)
	if m == nil {
		return Name{}, fmt.Errorf("parse wal name %q: not a WAL file name", base)
	}
	n := Name{State: Ready, Topic: m[2]}
	if m[1] == "uploaded" {
		n.State = Uploaded
	}
	if (n.State == Ready) != (m[7] == "parquet") {
		return Name{}, fmt.Errorf("parse wal name %q: extension does not match state", base)
	}
	p, err := strconv.ParseInt(m[3], 10, 32)
	if err != nil {
		return Name{}, fmt.Errorf("parse wal name %q: partition: %w", base, err)
	}
	n.Partition = int32(p)
	if n.Start, err = strconv.ParseInt(m[4], 10, 64); err != nil {
		return Name{}, fmt.Errorf("parse wal name %q: start offset: %w", base, err)
	}
	if n.End, err = strconv.ParseInt(m[5], 10, 64); err != nil {
		return Name{}, fmt.Errorf("parse wal name %q: end offset: %w", base, err)
	}
	if n.End < n.Start {
		return Name{}, fmt.Errorf("parse wal name %q: end offset %d before start %d", base, n.End, n.Start)
	}
	if n.UUID, err = uuid.Parse(m[6]); err != nil {
		return Name{}, fmt.Errorf("parse wal name %q: uuid: %w", base, err)
	}
	if strings.Contains(n.Topic, "/") {
		return Name{}, fmt.Errorf("parse wal name %q: topic has a slash", base)
	}
	return n, nil
}
