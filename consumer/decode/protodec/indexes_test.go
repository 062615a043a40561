package protodec

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestIndexesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		indexes []int
		wire    []byte
	}{
		{[]int{0}, []byte{0}},
		{[]int{1}, []byte{2, 2}},
		{[]int{0, 2}, []byte{4, 0, 4}},
		{[]int{3, 1, 70}, []byte{6, 6, 2, 0x8c, 0x01}},
	} {
		b := AppendIndexes([]byte{0xAA}, tc.indexes)
		if !bytes.Equal(b[1:], tc.wire) {
			t.Errorf("AppendIndexes(%v) = % x, want % x", tc.indexes, b[1:], tc.wire)
		}
		got, rest, err := ReadIndexes(append(b[1:], "msg"...))
		if err != nil || !slices.Equal(got, tc.indexes) || string(rest) != "msg" {
			t.Errorf("ReadIndexes(% x) = %v %q %v, want %v \"msg\"", tc.wire, got, rest, err, tc.indexes)
		}
	}
	// No indexes are written as [0].
	if b := AppendIndexes(nil, nil); !bytes.Equal(b, []byte{0}) {
		t.Errorf("AppendIndexes(nil) = % x, want 00", b)
	}
}

func TestReadIndexesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated count"},
		{"truncated count", []byte{0x80}, "truncated count"},
		{"count beyond the bytes", []byte{6, 2}, "count 3"},
		{"negative count", []byte{3}, "count -2"},
		{"truncated index", []byte{2, 0x80}, "index 0 truncated"},
		{"negative index", []byte{2, 1}, "index 0 is -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadIndexes(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMessageAt(t *testing.T) {
	fd := compileAll(t)
	for _, tc := range []struct {
		indexes []int
		want    string
	}{
		{nil, "test.all.All"},
		{[]int{0}, "test.all.All"},
		{[]int{1}, "test.all.Second"},
		// The entry messages of All's two maps, declared before Inner,
		// come first among its nested messages, as in the descriptor the
		// registry's serializers number.
		{[]int{0, 0}, "test.all.All.CountsEntry"},
		{[]int{0, 2}, "test.all.All.Inner"},
		{[]int{0, 2, 0}, "test.all.All.Inner.Leaf"},
		{[]int{1, 0, 0}, "test.all.Second.Nested.Deeper"},
	} {
		md, err := MessageAt(fd, tc.indexes)
		if err != nil || string(md.FullName()) != tc.want {
			t.Errorf("MessageAt(%v) = %v %v, want %s", tc.indexes, md, err, tc.want)
		}
	}
	for _, bad := range [][]int{{2}, {1, 1}, {0, 2, 0, 0}, {0, 3}} {
		if _, err := MessageAt(fd, bad); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("MessageAt(%v): err = %v, want out of range", bad, err)
		}
	}
}
