package avrodec

import (
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

// FuzzAvroDecode feeds arbitrary bytes to decoders of a schema with every
// type: one that builds every column and one that skips all but one
// field. Neither may panic, every error must be a *decode.Error, and a
// payload the building decoder accepts must be one the skipping decoder
// accepts too, since both read the same bytes. The seed corpus runs in
// every go test.
func FuzzAvroDecode(f *testing.F) {
	s := mustParse(f, allTypes)
	table, err := TableSchema(s)
	if err != nil {
		f.Fatal(err)
	}
	all, err := New(table, nil, s)
	if err != nil {
		f.Fatal(err)
	}
	all.Limit(1<<20, 64)
	skipping, err := New(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "ol", Type: iceberg.PrimitiveTypes.Int64}), nil, s)
	if err != nil {
		f.Fatal(err)
	}
	rec, err := New(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int32}),
		map[string]string{"v": "list.v"}, mustParse(f, skipAll))
	if err != nil {
		f.Fatal(err)
	}
	rec.Limit(0, 32)

	ts := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Add(encode(f, allTypes, map[string]any{
		"b": true, "i": int32(-7), "l": int64(1) << 40, "f": float32(1.5), "d": 2.25,
		"s": "s", "by": []byte{0}, "e": "RED", "fx": []byte("abcd"),
		"decb": big.NewRat(-1, 100), "decf": big.NewRat(1, 1000),
		"us": "0b8f7a4e-3c2d-4e1f-9a8b-7c6d5e4f3a2b", "uf": [16]byte{1},
		"dt": ts, "tms": time.Second, "tus": time.Second, "tsms": ts, "tsus": ts, "ltsms": ts, "ltsus": ts, "tsns": ts,
		"rec": map[string]any{"x": int32(1), "y": "y"}, "arr": []any{int64(1)}, "narr": []any{nil, "a"},
		"m": map[string]any{"k": 0.5, "j": 1.5}, "ref": nil, "os": nil, "ol": int64(3),
	}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add(append(zigzag(nil, -1), 0x80))

	check := func(t *testing.T, d *Decoder, p []byte) bool {
		_, err := d.DecodeInto(nil, p)
		var de *decode.Error
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error %T %v is not a *decode.Error", err, err)
		}
		return err == nil
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		built := check(t, all, p)
		skipped := check(t, skipping, p)
		if built && !skipped {
			t.Fatalf("payload %x decodes with every column but not when skipping them", p)
		}
		check(t, rec, p)
	})
}
