package consumer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzDecode feeds arbitrary payloads to a decoder of a schema with every
// type. Decode must never panic, must fail with a *DecodeError exactly when
// it fails, must call a payload not JSON exactly when encoding/json does,
// and every Row it returns must append to a RecordBuilder and give valid
// arrays. The parser must build what encoding/json builds, and the one-pass
// visit of plain paths must give what evaluating them on the whole document
// gives. The seed corpus runs in every go test.
func FuzzDecode(f *testing.F) {
	for _, doc := range allTypesDocs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(narrowEvent))
	for _, seed := range []string{
		// Invalid JSON.
		``, ` `, `{`, `}`, `{"meta":}`, `{"meta":{"id":1}} trailing`, `{"a":1}{"a":2}`, `nul`, `[1,]`,
		`{"meta":{"id":01}}`, `{"meta":{"id":1.}}`, `{"meta":{"id":-}}`, "{\"name\":\"a\x01b\"}",
		// Valid JSON of the wrong shape.
		`null`, `1`, `"x"`, `[]`, `[{"meta":{"id":1}}]`, `{"meta":null}`, `{"meta":{"id":[]}}`,
		// Huge numbers.
		`{"meta":{"id":1e999999999999999999,"event time":0}}`,
		`{"meta":{"id":123456789012345678901234567890,"event time":1e30}}`,
		`{"meta":{"id":1,"event time":-9223372036854775808},"big":1e-999999999,"amount":99999999999999999999999999999999999999999}`,
		`{"meta":{"id":1,"event time":0},"ratio":1e400,"score":-1e400,"age":2147483648}`,
		// NaN and infinity strings.
		`{"meta":{"id":1,"event time":0},"ratio":"NaN","score":"-Infinity","amount":"NaN","age":"Inf"}`,
		`{"meta":{"id":"NaN","event time":"NaN"}}`,
		// Invalid UTF-8 and escapes.
		"{\"meta\":{\"id\":1,\"event time\":0},\"name\":\"\xff\xfe\",\"attrs\":{\"\xc3\":\"\xed\xa0\x80\"}}",
		`{"meta":{"id":1,"event time":0},"name":"\ud800","uid":"\u0000"}`,
		// Duplicate keys.
		`{"meta":{"id":1,"event time":0},"meta":{"id":"x"}}`,
		`{"meta":{"id":1,"event time":0},"counts":{"1":1,"1":null}}`,
		// Wrong types inside nested values.
		`{"meta":{"id":1,"event time":0},"user":{"name":null}}`,
		`{"meta":{"id":1,"event time":0},"user":{"name":"x","tags":[null]}}`,
		`{"meta":{"id":1,"event time":0},"events":[{"kind":1,"meta":{"a":"1.234"}}]}`,
		`{"meta":{"id":1,"event time":0},"matrix":[[1,[2]]],"counts":{"x":1}}`,
		`{"meta":{"id":1,"event time":"2026-02-30T00:00:00Z"},"day":"0000-01-01","ts":"9999-12-31T23:59:59.999999999-23:59"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Add([]byte(`{"meta":{"id":1,"event time":0},"user":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`))
	f.Add([]byte(`{"meta":{"id":1,"event time":0},"matrix":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`))

	schema := allTypesSchema()
	mapping := allTypesMapping()
	mapping["name"] = "name || user.name" // one more expression for go-jmespath
	d, err := NewDecoder(schema, mapping)
	if err != nil {
		f.Fatal(err)
	}
	// Plain paths only, with indexes, paths below a captured value (user)
	// and a duplicate path (matrix[1][0]): decoded by one visit (visit) and
	// on the whole document (whole).
	plainMapping := allTypesMapping()
	plainMapping["nitems"] = "events[0].meta.x"
	plainMapping["name"] = "user.tags[-1]"
	plainMapping["ratio"] = "matrix[1][0]"
	plainMapping["score"] = "matrix[1][0]"
	plainMapping["age"] = "user.address.zip"
	visit, err := NewDecoder(schema, plainMapping)
	if err != nil {
		f.Fatal(err)
	}
	if visit.root == nil {
		f.Fatal("plain mapping does not visit")
	}
	whole := *visit
	whole.root = nil
	as, err := ArrowSchema(schema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkParserMatchesStd(t, payload)

		vr, verr := visit.Decode(payload)
		wr, werr := whole.Decode(payload)
		// %#v shows NaN equal to NaN, where reflect.DeepEqual does not.
		sameRows := reflect.DeepEqual(vr, wr) || fmt.Sprintf("%#v", vr) == fmt.Sprintf("%#v", wr)
		if !sameRows || (verr == nil) != (werr == nil) ||
			(verr != nil && verr.(*DecodeError).Reason != werr.(*DecodeError).Reason) {
			t.Fatalf("visit gives %#v, %v; whole document %#v, %v", vr, verr, wr, werr)
		}

		row, err := d.Decode(payload)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			switch de.Reason {
			case ReasonNotJSON, ReasonConvert, ReasonMissingRequired:
			default:
				t.Fatalf("unknown reason %q", de.Reason)
			}
			if (de.Reason == ReasonNotJSON) == json.Valid(payload) {
				t.Fatalf("reason %s, but json.Valid says %v: %v", de.Reason, json.Valid(payload), err)
			}
			if de.Reason != ReasonNotJSON && de.Column == "" {
				t.Fatalf("no column in %v", err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error message of %d bytes", len(err.Error()))
			}
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("decoded a payload that is not JSON: %q", payload)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		AppendRow(b, row)
		AppendRow(b, row)
		rec := b.NewRecordBatch()
		defer rec.Release()
		for i, col := range rec.Columns() {
			if err := checkArray(col); err != nil {
				t.Fatalf("column %d: %v", i, err)
			}
		}
	})
}
