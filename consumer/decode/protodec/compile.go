package protodec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// schemaFile is the name the registry's schema text is compiled under. It
// is in no directory a registry reference uses, so a reference cannot
// shadow it.
const schemaFile = "<registry schema>.proto"

// Compile compiles the .proto text of a registry schema at run time, with
// its references (import name -> schema text, as the registry's
// references give them). Imports of google/protobuf/*.proto (the well-known
// types), confluent/meta.proto, confluent/type/decimal.proto and the
// google/type files resolve without being given, as the registry's own
// serializers assume; a reference of the same name wins over them.
//
// The descriptor it returns holds no reference to the texts.
func Compile(ctx context.Context, schema string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	access := func(path string) (io.ReadCloser, error) {
		if path == schemaFile {
			return io.NopCloser(strings.NewReader(schema)), nil
		}
		if src, ok := refs[path]; ok {
			return io.NopCloser(strings.NewReader(src)), nil
		}
		if src, ok := builtinFiles[path]; ok {
			return io.NopCloser(strings.NewReader(src)), nil
		}
		return nil, fmt.Errorf("import %q is neither a reference of the schema nor a file the registry provides: %w", path, errNotFound)
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: access}),
	}
	files, err := c.Compile(ctx, schemaFile)
	if err != nil {
		return nil, fmt.Errorf("compile protobuf schema: %w", err)
	}
	return files[0], nil
}

var errNotFound = errors.New("not found")
