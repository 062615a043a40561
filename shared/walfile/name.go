package walfile

import (
	"encoding/hex"
	"fmt"
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

// String formats the file name for the name's state. Directory scans
// format every name they list, so it is built with appends, not fmt.
func (n Name) String() string {
	var prefix, ext string
	switch n.State {
	case Active:
		prefix, ext = ActivePrefix, SegmentExt
	case Ready:
		prefix, ext = ReadyPrefix, SegmentExt
	case Uploaded:
		prefix, ext = UploadedPrefix, MarkerExt
	default:
		return ""
	}
	b := make([]byte, 0, len(prefix)+len(n.Topic)+len(ext)+36+3*20)
	b = append(b, prefix...)
	b = append(b, n.Topic...)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(n.Partition), 10)
	b = append(b, '_')
	if n.State != Active {
		b = strconv.AppendInt(b, n.Start, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, n.End, 10)
		b = append(b, '_')
	}
	var id [36]byte
	hex.Encode(id[0:8], n.UUID[0:4])
	id[8] = '-'
	hex.Encode(id[9:13], n.UUID[4:6])
	id[13] = '-'
	hex.Encode(id[14:18], n.UUID[6:8])
	id[18] = '-'
	hex.Encode(id[19:23], n.UUID[8:10])
	id[23] = '-'
	hex.Encode(id[24:], n.UUID[10:])
	b = append(b, id[:]...)
	b = append(b, ext...)
	return string(b)
}

// As returns the name of the same segment in another state.
func (n Name) As(s State) Name {
	n.State = s
	return n
}

// Parse parses a WAL file's base name:
//
//	active_<topic>_<partition>_<uuid>.parquet
//	ready_<topic>_<partition>_<start>-<end>_<uuid>.parquet
//	uploaded_<topic>_<partition>_<start>-<end>_<uuid>.json
//
// The topic may contain underscores: the fields are read from the right.
// Every role lists the directory, thousands of files at a time with many
// open segments, so this is plain string work, no regular expression.
func Parse(base string) (Name, error) {
	bad := func(what string) (Name, error) {
		return Name{}, fmt.Errorf("parse wal name %q: %s", base, what)
	}
	var n Name
	rest, ok := "", false
	switch {
	case strings.HasPrefix(base, ActivePrefix):
		n.State, rest, ok = Active, base[len(ActivePrefix):], true
	case strings.HasPrefix(base, ReadyPrefix):
		n.State, rest, ok = Ready, base[len(ReadyPrefix):], true
	case strings.HasPrefix(base, UploadedPrefix):
		n.State, rest, ok = Uploaded, base[len(UploadedPrefix):], true
	}
	if !ok {
		return bad("not a WAL file name")
	}
	switch {
	case strings.HasSuffix(rest, SegmentExt):
		if n.State == Uploaded {
			return bad("extension does not match state")
		}
		rest = rest[:len(rest)-len(SegmentExt)]
	case strings.HasSuffix(rest, MarkerExt) && n.State != Active:
		if n.State == Ready {
			return bad("extension does not match state")
		}
		rest = rest[:len(rest)-len(MarkerExt)]
	default:
		return bad("not a WAL file name")
	}
	// _<uuid> last: 36 lowercase hex digits and dashes.
	if len(rest) < 37 || rest[len(rest)-37] != '_' {
		return bad("not a WAL file name")
	}
	id := rest[len(rest)-36:]
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') && c != '-' {
			return bad("not a WAL file name")
		}
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return bad("uuid: " + err.Error())
	}
	n.UUID = u
	rest = rest[:len(rest)-37]
	if n.State != Active {
		// _<start>-<end> before it.
		i := strings.LastIndexByte(rest, '_')
		if i < 0 {
			return bad("not a WAL file name")
		}
		start, end, found := strings.Cut(rest[i+1:], "-")
		if !found || !digits(start) || !digits(end) {
			return bad("not a WAL file name")
		}
		if n.Start, err = strconv.ParseInt(start, 10, 64); err != nil {
			return bad("start offset: " + err.Error())
		}
		if n.End, err = strconv.ParseInt(end, 10, 64); err != nil {
			return bad("end offset: " + err.Error())
		}
		rest = rest[:i]
	}
	// <topic>_<partition>.
	i := strings.LastIndexByte(rest, '_')
	if i < 1 || !digits(rest[i+1:]) {
		return bad("not a WAL file name")
	}
	p, err := strconv.ParseInt(rest[i+1:], 10, 32)
	if err != nil {
		return bad("partition: " + err.Error())
	}
	n.Topic, n.Partition = rest[:i], int32(p)
	if strings.ContainsRune(n.Topic, '\n') {
		return bad("not a WAL file name")
	}
	if n.State != Active && n.End < n.Start {
		return Name{}, fmt.Errorf("parse wal name %q: end offset %d before start %d", base, n.End, n.Start)
	}
	if strings.Contains(n.Topic, "/") {
		return Name{}, fmt.Errorf("parse wal name %q: topic has a slash", base)
	}
	return n, nil
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
