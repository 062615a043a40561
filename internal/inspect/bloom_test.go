package inspect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/storage"
)

func TestSidecarLocation(t *testing.T) {
	tests := []struct {
		name, file, column, want string
	}{
		{"data file", "/wh/data/0b8f.parquet", "event_id", "/wh/data/0b8f.bloom.event_id"},
		{"azure data file", "abfs://c@a.dfs.core.windows.net/wh/data/0b8f.parquet", "tenant",
			"abfs://c@a.dfs.core.windows.net/wh/data/0b8f.bloom.tenant"},
		{"sidecar unchanged", "/wh/data/0b8f.bloom.event_id", "event_id", "/wh/data/0b8f.bloom.event_id"},
		{"escaped column", "/d/u.parquet", "a b/c~é.D-1_x", "/d/u.bloom.a~20b~2Fc~7E~C3~A9.D-1_x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SidecarLocation(tc.file, tc.column); got != tc.want {
				t.Fatalf("SidecarLocation(%q, %q) = %q, want %q", tc.file, tc.column, got, tc.want)
			}
		})
	}
}

// sidecar returns the bytes of a sidecar for column holding values.
func sidecar(t *testing.T, column string, values ...string) []byte {
	t.Helper()
	f := bloom.New(len(values), bloom.DefaultFPRate)
	f.Column = column
	for _, v := range values {
		f.Add([]byte(v))
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tenants are the values of the test filters: tenant-0 ... tenant-999.
func tenants() []string {
	var v []string
	for i := range 1000 {
		v = append(v, "tenant-"+strconv.Itoa(i))
	}
	return v
}

func TestLookupBloomLocal(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.bloom.tenant", sidecar(t, "tenant", tenants()...))
	write("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.bloom.amount", sidecar(t, "amount", "-12.30", "0.05"))
	write("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.bloom.ts", sidecar(t, "ts", "2024-03-01T10:11:12.500000Z"))
	corrupt := sidecar(t, "tenant", "x")
	corrupt[len(corrupt)-1] ^= 0xff
	write("corrupt.bloom.tenant", corrupt)
	write("wrong.bloom.tenant", sidecar(t, "country", "de"))
	sc := filepath.Join(dir, "0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.bloom.tenant")

	tests := []struct {
		name              string
		file, column, typ string
		value             string
		wantMaybe         bool
		wantErr           string
		wantErrIs         error
	}{
		{name: "present, by sidecar", file: sc, column: "tenant", typ: "string", value: "tenant-42", wantMaybe: true},
		{name: "present, by data file", file: data, column: "tenant", typ: "string", value: "tenant-999", wantMaybe: true},
		{name: "absent", file: data, column: "tenant", typ: "string", value: "globex"},
		{name: "absent, near miss", file: data, column: "tenant", typ: "string", value: "tenant-42 "},
		{name: "decimal spelled otherwise", file: data, column: "amount", typ: "decimal(9,2)", value: "-12.3", wantMaybe: true},
		{name: "decimal absent", file: data, column: "amount", typ: "decimal(9,2)", value: "12.30"},
		{name: "timestamp in another zone", file: data, column: "ts", typ: "timestamptz", value: "2024-03-01T12:11:12.5+02:00", wantMaybe: true},
		{name: "value impossible for the type", file: data, column: "amount", typ: "decimal(9,2)", value: "1.234", wantErr: "more than 2 digits after the point"},
		{name: "wrong column", file: filepath.Join(dir, "wrong.bloom.tenant"), column: "tenant", typ: "string", value: "de",
			wantErr: `covers column "country", not "tenant"`},
		{name: "corrupt", file: filepath.Join(dir, "corrupt.bloom.tenant"), column: "tenant", typ: "string", value: "x",
			wantErr: "checksum mismatch", wantErrIs: bloom.ErrCorrupt},
		{name: "no sidecar for the column", file: data, column: "country", typ: "string", value: "de",
			wantErr: "0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.bloom.country", wantErrIs: os.ErrNotExist},
		{name: "file uri", file: "file://" + data, column: "tenant", typ: "string", value: "tenant-7", wantMaybe: true},
		{name: "file uri absent", file: "file://" + data, column: "tenant", typ: "string", value: "initech"},
	}
	store := storage.Open(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ans, err := LookupBloom(context.Background(), store, tc.file, tc.column, tc.typ, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if tc.wantErrIs != nil && !errors.Is(err, tc.wantErrIs) {
					t.Fatalf("error %v does not wrap %v", err, tc.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ans.MayContain != tc.wantMaybe {
				t.Fatalf("MayContain = %v, want %v (%+v)", ans.MayContain, tc.wantMaybe, ans)
			}
			if ans.Column != tc.column || ans.Count == 0 || ans.Bits == 0 || ans.Hashes == 0 {
				t.Fatalf("answer %+v", ans)
			}
		})
	}
}

// TestLookupBloomNoFalseNegatives asks for every value added and for as
// many absent ones: every present value is "maybe", and absent ones are
// "no" at about the filter's false-positive rate.
func TestLookupBloomNoFalseNegatives(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "u.bloom.tenant")
	if err := os.WriteFile(sc, sidecar(t, "tenant", tenants()...), 0o644); err != nil {
		t.Fatal(err)
	}
	maybes := 0
	for i := range 2000 {
		ans, err := LookupBloom(context.Background(), nil, sc, "tenant", "string", "tenant-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if i < 1000 && !ans.MayContain {
			t.Fatalf("tenant-%d was added but the sidecar says no", i)
		}
		if i >= 1000 && ans.MayContain {
			maybes++
		}
	}
	if maybes > 50 {
		t.Fatalf("%d of 1000 absent values answered maybe, at a 1%% target", maybes)
	}
}

// TestLookupBloomAzure reads the sidecar from Azurite through
// shared/storage with the catalog's adls.* properties, as `bloom test
// --config` does.
func TestLookupBloomAzure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := devenv.StartAzurite(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	if err := a.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	store := storage.Open(a.Properties())
	data := a.Location("warehouse", "web/clicks/data/0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11.parquet")
	b := sidecar(t, "tenant", tenants()...)
	if err := store.Put(ctx, SidecarLocation(data, "tenant"), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]bool{"tenant-1": true, "tenant-500": true, "globex": false} {
		ans, err := LookupBloom(ctx, store, data, "tenant", "string", value)
		if err != nil {
			t.Fatal(err)
		}
		if ans.MayContain != want {
			t.Errorf("%s: MayContain = %v, want %v", value, ans.MayContain, want)
		}
	}
	if _, err := LookupBloom(ctx, store, data, "country", "string", "de"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing sidecar: %v, want ErrNotFound", err)
	}
	if _, err := LookupBloom(ctx, nil, data, "tenant", "string", "x"); err == nil || !strings.Contains(err.Error(), "no storage") {
		t.Fatalf("no store: %v", err)
	}
}
