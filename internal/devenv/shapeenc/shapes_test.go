package shapeenc

import (
	"strings"
	"testing"

	"github.com/icewal/ingestor/internal/devenv"
)

// testShapes are the shapes every format must carry: the bench's two, and
// the narrow one with the upsert columns (op, version) of `ingestor bench
// --upserts`.
var testShapes = []string{devenv.ShapeNarrow, devenv.ShapeWide, devenv.ShapeNarrow + "+upserts"}

func testShape(t *testing.T, name string) devenv.Shape {
	t.Helper()
	base, upserts := strings.CutSuffix(name, "+upserts")
	shape, err := devenv.ShapeByName(base)
	if err != nil {
		t.Fatal(err)
	}
	if upserts {
		plan, err := devenv.NewUpserts(0.3, true)
		if err != nil {
			t.Fatal(err)
		}
		shape = devenv.UpsertShape(shape, plan)
	}
	return shape
}
