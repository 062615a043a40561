package protodec

import (
	"context"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// compileAll compiles testdata/all.proto, which imports well-known types,
// google/type/date.proto and a reference (common.proto).
func compileAll(t testing.TB) protoreflect.FileDescriptor {
	t.Helper()
	schema, err := os.ReadFile("testdata/all.proto")
	if err != nil {
		t.Fatal(err)
	}
	common, err := os.ReadFile("testdata/common.proto")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := Compile(context.Background(), string(schema), map[string]string{"common.proto": string(common)})
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func allMessage(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	return compileAll(t).Messages().ByName("All")
}

// marshal builds a message of md from fields (field name -> value: Go
// scalars as protoreflect.ValueOf takes them, map[string]any for a
// message, []any for a repeated field, map[any]any for a map) with
// dynamicpb, as a producer's serializer would.
func marshal(t testing.TB, md protoreflect.MessageDescriptor, fields map[string]any) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(build(t, md, fields))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func build(t testing.TB, md protoreflect.MessageDescriptor, fields map[string]any) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	for name, v := range fields {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("message %s has no field %s", md.FullName(), name)
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for k, e := range v.(map[any]any) {
				mp.Set(protoreflect.ValueOf(k).MapKey(), single(t, fd.MapValue(), e))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for _, e := range v.([]any) {
				l.Append(single(t, fd, e))
			}
		default:
			m.Set(fd, single(t, fd, v))
		}
	}
	return m
}

func single(t testing.TB, fd protoreflect.FieldDescriptor, v any) protoreflect.Value {
	if sub, ok := v.(map[string]any); ok {
		return protoreflect.ValueOfMessage(build(t, fd.Message(), sub))
	}
	return protoreflect.ValueOf(v)
}
