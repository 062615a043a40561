package protodec

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

func compile(t testing.TB, schema string, refs map[string]string) protoreflect.FileDescriptor {
	t.Helper()
	fd, err := Compile(context.Background(), schema, refs)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestCompile compiles a schema with a reference and imports of the
// well-known types and the files a registry provides without references.
func TestCompile(t *testing.T) {
	fd := compileAll(t)
	all := fd.Messages().ByName("All")
	if all == nil {
		t.Fatal("no message All")
	}
	for field, want := range map[string]protoreflect.FullName{
		"ts":    "google.protobuf.Timestamp",
		"day":   "google.type.Date",
		"w_i64": "google.protobuf.Int64Value",
		"ref":   "common.Ref",
	} {
		if got := all.Fields().ByName(protoreflect.Name(field)).Message().FullName(); got != want {
			t.Errorf("field %s is %s, want %s", field, got, want)
		}
	}

	// Every file a registry schema may import without a reference.
	var imports strings.Builder
	imports.WriteString("syntax = \"proto3\";\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range builtinFiles {
			if !yield(k) {
				return
			}
		}
	}) {
		imports.WriteString("import \"" + name + "\";\n")
	}
	imports.WriteString(`import "google/protobuf/struct.proto";
message M {
  google.type.Money price = 1;
  confluent.type.Decimal amount = 2 [(confluent.field_meta).params = {key: "precision", value: "9"}];
  google.type.DateTime at = 3;
}`)
	fd = compile(t, imports.String(), nil)
	if got := fd.Messages().ByName("M").Fields().ByName("price").Message().FullName(); got != "google.type.Money" {
		t.Errorf("price is %s", got)
	}

	// A reference wins over a built-in file of the same name.
	fd = compile(t, `syntax = "proto3"; import "google/type/date.proto"; message M { google.type.Date d = 1; }`,
		map[string]string{"google/type/date.proto": `syntax = "proto3"; package google.type; message Date { string iso = 1; }`})
	if fd.Messages().Get(0).Fields().Get(0).Message().Fields().ByName("iso") == nil {
		t.Error("the reference did not replace the built-in google/type/date.proto")
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"missing import", `syntax = "proto3"; import "other.proto"; message M { other.X x = 1; }`, `"other.proto"`},
		{"syntax", `syntax = "proto3"; message M { int32 = 1; }`, "compile protobuf schema"},
		{"unknown type", `syntax = "proto3"; message M { Nope x = 1; }`, "Nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(context.Background(), tc.schema, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %s", err, tc.want)
			}
		})
	}
}
