package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/icewal/ingestor/consumer/decode/decodetest"
)

// FuzzDecode feeds arbitrary payloads to a decoder of a schema with every
// type. Decode must never panic, must fail with a *Error exactly when it
// fails, and must call a payload not JSON exactly when encoding/json does.
// The parser must build what encoding/json builds, and the one-pass visit
// of plain paths must give what evaluating them on the whole document
// gives. The seed corpus runs in every go test. (The consumer's FuzzAppend
// appends the rows it returns to Arrow builders.)
func FuzzDecode(f *testing.F) {
	for _, seed := range decodetest.FuzzSeeds() {
		f.Add(seed)
	}

	schema := decodetest.AllTypesSchema()
	mapping := decodetest.AllTypesMapping()
	mapping["name"] = "name || user.name" // one more expression for go-jmespath
	d, err := New(schema, mapping)
	if err != nil {
		f.Fatal(err)
	}
	// Plain paths only, with indexes, paths below a captured value (user)
	// and a duplicate path (matrix[1][0]): decoded by one visit (visit) and
	// on the whole document (whole).
	plainMapping := decodetest.AllTypesMapping()
	plainMapping["nitems"] = "events[0].meta.x"
	plainMapping["name"] = "user.tags[-1]"
	plainMapping["ratio"] = "matrix[1][0]"
	plainMapping["score"] = "matrix[1][0]"
	plainMapping["age"] = "user.address.zip"
	visit, err := New(schema, plainMapping)
	if err != nil {
		f.Fatal(err)
	}
	if visit.root == nil {
		f.Fatal("plain mapping does not visit")
	}
	whole := *visit
	whole.root = nil
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkParserMatchesStd(t, payload)

		vr, verr := visit.DecodeInto(nil, payload)
		wr, werr := whole.DecodeInto(nil, payload)
		// %#v shows NaN equal to NaN, where reflect.DeepEqual does not.
		sameRows := reflect.DeepEqual(vr, wr) || fmt.Sprintf("%#v", vr) == fmt.Sprintf("%#v", wr)
		if !sameRows || (verr == nil) != (werr == nil) ||
			(verr != nil && verr.(*Error).Reason != werr.(*Error).Reason) {
			t.Fatalf("visit gives %#v, %v; whole document %#v, %v", vr, verr, wr, werr)
		}

		_, err := d.DecodeInto(nil, payload)
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *Error", err, err)
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
	})
}
