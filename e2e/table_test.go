package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/tableview"
)

// table runs `ingestor table <args> --config <the test's config>` and
// returns its stdout; a non-zero exit fails the test.
func (in *instance) table(args ...string) []byte {
	in.t.Helper()
	cmd := exec.Command(binary, append(append([]string{"table"}, args...), "--config", in.cfgPath)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		in.t.Fatalf("ingestor table %v: %v\n%s", args, err, stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), devenv.AzuriteKey) {
		in.t.Errorf("ingestor table %v shows the storage key", args)
	}
	return stdout.Bytes()
}

// decode decodes JSON strictly: a field the tableview types do not have
// is an error.
func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// TestTableCommands runs the record path (the run layout, SQLite catalog,
// Azurite), stops it, and looks at the table with the built binary's
// `ingestor table` commands, as a newcomer does after `make run`.
func TestTableCommands(t *testing.T) {
	w, in := newClicks(t, worldOptions{})
	defer in.dumpLogs()
	good, _ := w.produceMixed(t, clicksTopic, 0, 3000, 0)
	sup := in.start("run")
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)
	sup.signal(syscall.SIGTERM)
	sup.wait(t, 90*time.Second)

	tbl, closeCat, err := w.openTable(t.Context(), clicksTable)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat()

	var d tableview.Description
	decode(t, in.table("describe", "--dataset", "clicks", "--output", "json"), &d)
	for _, c := range d.Schema {
		f, ok := tbl.Schema().FindFieldByID(c.ID)
		if !ok || !strings.HasSuffix(c.Name, f.Name) {
			t.Errorf("describe shows field %d as %s, the table has %v", c.ID, c.Name, f)
		}
	}
	if len(d.Partition) != 2 || d.Partition[0].Name != "tenant" || d.Partition[0].Transform != "identity" ||
		d.Partition[1].Source != "ts" || d.Partition[1].Transform != "day" {
		t.Errorf("describe shows partition spec %+v, want tenant identity and day(ts)", d.Partition)
	}
	if d.Rows != int64(len(good)) || d.DataFiles == 0 || d.Bytes == 0 || d.Snapshots != len(tbl.Metadata().Snapshots()) {
		t.Errorf("describe: %d rows, %d files, %d bytes, %d snapshots; the table holds %d rows in %d snapshots",
			d.Rows, d.DataFiles, d.Bytes, d.Snapshots, len(good), len(tbl.Metadata().Snapshots()))
	}
	if d.LastCommit == nil || !strings.HasPrefix(d.LastCommit.By, tableview.ByIngestor+" (dataset clicks)") {
		t.Errorf("describe: last commit %+v, want one by the ingestor", d.LastCommit)
	}

	// Every append is the committer's, with its summary fields; their
	// added rows add up to the table's rows.
	var snaps []tableview.Snapshot
	decode(t, in.table("snapshots", "--dataset", "clicks", "--output", "json"), &snaps)
	var appended int64
	for _, s := range snaps {
		if s.Operation != "append" {
			continue
		}
		if s.Dataset != "clicks" || len(s.Segments) == 0 || s.AddedFiles != int64(len(s.Segments)) {
			t.Errorf("append %d: dataset %q, %d segments, %d added files; want clicks and one file per segment", s.ID, s.Dataset, len(s.Segments), s.AddedFiles)
		}
		appended += s.AddedRows
	}
	if appended != int64(len(good)) {
		t.Errorf("the appends add %d rows, want %d", appended, len(good))
	}

	var files []tableview.File
	decode(t, in.table("files", "--dataset", "clicks", "--output", "json"), &files)
	var rows int64
	tenants := map[string]int64{}
	for _, f := range files {
		rows += f.Rows
		tenants[f.Partition["tenant"]] += f.Rows
	}
	if rows != int64(len(good)) || int64(len(files)) != d.DataFiles {
		t.Errorf("files: %d files holding %d rows, want %d files and %d rows", len(files), rows, d.DataFiles, len(good))
	}
	wantTenants := map[string]int64{}
	for _, seq := range good {
		wantTenants[devenv.NewEvent(seq, eventTime(seq)).Meta.Tenant]++
	}
	var acme []tableview.File
	decode(t, in.table("files", "--dataset", "clicks", "--partition", "tenant=acme", "--output", "json"), &acme)
	var acmeRows int64
	for _, f := range acme {
		acmeRows += f.Rows
	}
	if acmeRows != wantTenants["acme"] || tenants["acme"] != wantTenants["acme"] {
		t.Errorf("files of tenant acme hold %d rows (%d in the full list), want %d", acmeRows, tenants["acme"], wantTenants["acme"])
	}

	var head []map[string]any
	decode(t, in.table("head", "--dataset", "clicks", "--limit", "7", "--output", "json"), &head)
	if len(head) != 7 {
		t.Fatalf("head --limit 7 gave %d rows", len(head))
	}
	byID := map[string]devenv.Event{}
	for _, seq := range good {
		ev := devenv.NewEvent(seq, eventTime(seq))
		byID[ev.ID] = ev
	}
	for _, row := range head {
		ev, ok := byID[row["event_id"].(string)]
		if !ok || row["tenant"] != ev.Meta.Tenant || row["kind"] != ev.Kind || row["country"] != ev.Geo.Country {
			t.Errorf("head row %v is not a produced event (want %+v)", row, ev)
		}
	}

	text := string(in.table("head", "--dataset", "clicks", "--limit", "3"))
	if !strings.Contains(text, "event_id") || !strings.Contains(text, "3 rows") {
		t.Errorf("head as text:\n%s", text)
	}
	text = string(in.table("describe", "--dataset", "clicks"))
	if !strings.Contains(text, "ts_day") || !strings.Contains(text, "by ingestor (dataset clicks)") {
		t.Errorf("describe as text:\n%s", text)
	}
	t.Logf("e2e: ingestor table on %d rows in %d files over %d snapshots", len(good), len(files), len(snaps))
}

// TestDemoBannerTableCommands runs what `make run` runs, and then the
// table commands its banner suggests, with the config and dataset it
// names, as a newcomer would copy them.
func TestDemoBannerTableCommands(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(binary, "demo", "--dir", dir, "--duration", "8s", "--kafka-port", "0", "--every", "2s", "--rate", "2000").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`ingestor table describe\|snapshots\|files\|head --config (\S+) --dataset (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the banner does not suggest the table commands:\n%s", out)
	}
	cfgPath, dataset := string(m[1]), string(m[2])
	for _, sub := range []string{"describe", "snapshots", "files", "head"} {
		cmd := exec.Command(binary, "table", sub, "--config", cfgPath, "--dataset", dataset, "--output", "json")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("ingestor table %s, as the banner suggests: %v\n%s", sub, err, stderr.String())
		}
		if sub == "head" {
			var rows []map[string]any
			decode(t, stdout.Bytes(), &rows)
			if len(rows) != 10 {
				t.Errorf("table head gave %d rows after the demo, want the default 10", len(rows))
			}
		}
	}
}
