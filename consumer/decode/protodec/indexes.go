package protodec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ReadIndexes reads the message indexes of the Confluent Protobuf wire
// format, which follow the magic byte and the schema id: a zig-zag varint
// count, then that many zig-zag varint indexes, the path of the record's
// message among the schema's messages (top level first). A count of 0,
// the single byte the serializers write for the most common case, means
// [0], the schema's first message. It returns the bytes after the
// indexes, the protobuf message itself.
func ReadIndexes(b []byte) (indexes []int, rest []byte, err error) {
	count, n := binary.Varint(b)
	if n <= 0 {
		return nil, nil, errors.New("message indexes: truncated count")
	}
	b = b[n:]
	if count == 0 {
		return []int{0}, b, nil
	}
	// Each index takes at least one byte, which bounds the count before
	// anything is allocated.
	if count < 0 || count > int64(len(b)) {
		return nil, nil, fmt.Errorf("message indexes: count %d does not fit the %d bytes that follow", count, len(b))
	}
	indexes = make([]int, count)
	for i := range indexes {
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("message indexes: index %d truncated", i)
		}
		if x < 0 || x > 1<<31 {
			return nil, nil, fmt.Errorf("message indexes: index %d is %d", i, x)
		}
		indexes[i] = int(x)
		b = b[n:]
	}
	return indexes, b, nil
}

// AppendIndexes appends the message indexes as ReadIndexes reads them,
// [0] (or none) as the single byte 0.
func AppendIndexes(b []byte, indexes []int) []byte {
	if len(indexes) == 0 || len(indexes) == 1 && indexes[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(indexes)))
	for _, x := range indexes {
		b = binary.AppendVarint(b, int64(x))
	}
	return b
}

// MessageAt returns the message the indexes name in fd: the first index
// among its top-level messages, each next one among the nested messages
// of the previous. No indexes name the first message.
func MessageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			where := "the schema's top level"
			if md != nil {
				where = string(md.FullName())
			}
			return nil, fmt.Errorf("message index %d (at depth %d of %v) is out of range: %s has %d messages", i, depth, indexes, where, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}
