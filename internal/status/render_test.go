package status

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of the text view")

// goldenReport covers every case of the view: a process down with the
// supervisor's count of its restarts, a paused consumer, lag, drops, WAL
// files in every state, an unknown value, a commit and a commit error.
func goldenReport() *Report {
	now := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	lastCommit := now.Add(-3 * time.Second)
	return &Report{
		Time:   now,
		Config: "/etc/ingestor/ingestor.yaml",
		WALDir: "/var/lib/ingestor/wal",
		Volume: Volume{UsedPct: ptr(81.25), ConsumerUsedPct: ptr(80.5), HighWatermarkPct: 80, ResumeBelowPct: 75,
			Paused: ptr(true), PausedReasons: []string{"wal_volume_above_high_watermark"}},
		Processes: []Process{
			{Name: "supervisor", Address: "127.0.0.1:9400", State: StateUp, PID: 4100, UptimeSeconds: ptr(7322.4)},
			{Name: "consumer", Address: "127.0.0.1:9401", State: StateUp, PID: 4242, SupervisorUp: ptr(true), Restarts: ptr(0.0), UptimeSeconds: ptr(7321.9)},
			{Name: "uploader", Address: "127.0.0.1:9402", State: StateDown, Error: "connection refused", SupervisorUp: ptr(false), Restarts: ptr(4.0)},
			{Name: "committer", Address: "127.0.0.1:9403", State: StateUp, PID: 4343, SupervisorUp: ptr(true), Restarts: ptr(1.0)},
		},
		Datasets: []Dataset{
			{
				Name: "clicks", Topic: "clicks", Table: "web.clicks",
				Paused: ptr(true), EventsPerSecond: ptr(1520.34),
				Lag:      []PartitionLag{{0, 30}, {1, 0}, {2, 60}, {3, 30}},
				LagTotal: ptr(120.0),
				Dropped:  map[string]float64{"not_json": 4, "convert": 4, "missing_required": 3}, DroppedTotal: ptr(11.0),
				SegmentsOpen: ptr(4.0), Stalled: []string{"unassigned"}, UnassignedPartitions: ptr(2.0),
				WAL: WALStates{Active: FileCount{4, 1258291}, Ready: FileCount{2, 3565158},
					Uploaded: FileCount{1, 412}},
				LastCommit: &lastCommit, LastCommitAgeSeconds: ptr(3.0),
				LastCommitError: &CommitError{Time: now.Add(-125 * time.Second), AgeSeconds: 125, Reason: "unknown",
					Step: "commit outcome unknown; the next interval checks the table", Error: "commit 2 files to web.clicks:\n  context deadline exceeded"},
				Upkeep: &Upkeep{Snapshots: ptr(181.0), MetadataBytes: ptr(412345.0), Manifests: ptr(12.0), DataFiles: ptr(340.0),
					SmallFiles: ptr(37.0), SnapshotsExpired: ptr(4139.0), RewrittenBytes: ptr(1.5e9),
					DeleteFiles: ptr(14.0), PartitionDeleteFiles: ptr(3.0), DeletedRows: ptr(2210.0), DeletesApplied: ptr(98000.0),
					StepFailures: map[string]float64{"compact": 2}},
			},
			{
				Name: "orders", Topic: "orders", Table: "shop.orders",
				Paused: ptr(true), PausedReasons: []string{"disk", "operator"}, EventsPerSecond: ptr(0.0),
				OperatorPause: &OperatorPause{By: "alice (uid 1000)", Reason: "catalog migration", Since: now.Add(-42 * time.Minute), AgeSeconds: 2520}, Lag: []PartitionLag{}, LagTotal: ptr(0.0),
				Dropped: map[string]float64{}, DroppedTotal: ptr(0.0), SegmentsOpen: ptr(0.0),
				Stalled: []string{}, UnassignedPartitions: ptr(0.0),
			},
		},
		OtherWAL: &WALStates{Ready: FileCount{1, 30}},
	}
}

func TestRenderGolden(t *testing.T) {
	var buf bytes.Buffer
	Render(&buf, goldenReport())
	golden := filepath.Join("testdata", "status.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("text view differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
	for i, line := range strings.Split(buf.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line %d has trailing spaces: %q", i+1, line)
		}
	}
}

func TestRenderUnits(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{size(0), "0 B"}, {size(1023), "1023 B"}, {size(1024), "1.0 KiB"}, {size(3565158), "3.4 MiB"},
		{age(850 * time.Millisecond), "850ms"}, {age(12 * time.Second), "12s"}, {age(185 * time.Second), "3m05s"},
		{age(130 * time.Minute), "2h10m"}, {age(76 * time.Hour), "3d4h"}, {age(-time.Second), "0ms"},
		{files(FileCount{1, 5}), "1 file (5 B)"}, {files(FileCount{2, 5}), "2 files (5 B)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestWALLineShowsQuarantined: a quarantined file is on the dataset's WAL
// line, with what to do; without one the line is as before.
func TestWALLineShowsQuarantined(t *testing.T) {
	s := WALStates{Ready: FileCount{Files: 2, Bytes: 10}}
	if got := walLine(s); strings.Contains(got, "QUARANTINED") {
		t.Errorf("line without quarantined files: %q", got)
	}
	s.Quarantined = FileCount{Files: 1, Bytes: 4}
	if got := walLine(s); !strings.Contains(got, "QUARANTINED 1 file") || !strings.Contains(got, "ingestor wal ls") {
		t.Errorf("line: %q", got)
	}
}
