package rolestatus

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/pause"
)

func ptr[T any](v T) *T { return &v }

var (
	at    = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	atNs  = time.Date(2026, 12, 2, 9, 30, 0, 123456789, time.UTC)
	entry = pause.Entry{By: "alice (uid 1000)", Reason: "catalog migration", Since: at}
)

// TestWireForm: each role's body, in its envelope, is the JSON object
// whose keys `ingestor status`, the supervisor and scripts read, and it
// decodes back into the same body. A key renamed on the writing side
// only, or on the reading side only, fails here.
func TestWireForm(t *testing.T) {
	tests := []struct {
		name string
		st   Status
		wire string
	}{
		{
			name: "supervisor",
			st: Status{Role: "supervisor", PID: 10, Time: at, Details: Details{Supervisor: &Supervisor{
				PID: 10, Started: at, UptimeSeconds: 60,
				Children: map[string]Child{
					"consumer": {Running: true, Restarts: 2, PID: 11, Started: at, UptimeSeconds: ptr(30.5)},
					"uploader": {Restarts: 1},
				},
				Paused: map[string]pause.Entry{"orders": entry},
			}}},
			wire: `{"role":"supervisor","pid":10,"time":"2026-12-02T09:30:00Z","details":{
				"pid":10,"started":"2026-12-02T09:30:00Z","uptime_seconds":60,
				"children":{
					"consumer":{"running":true,"restarts":2,"pid":11,"started":"2026-12-02T09:30:00Z","uptime_seconds":30.5},
					"uploader":{"running":false,"restarts":1}},
				"paused":{"orders":{"by":"alice (uid 1000)","reason":"catalog migration","since":"2026-12-02T09:30:00Z"}}}}`,
		},
		{
			name: "consumer over RPC",
			st: Status{Role: "consumer", PID: 11, MetricsAddress: "127.0.0.1:9401", State: StateRunning, Details: Details{Consumer: &Consumer{
				Paused: true, PausedReasons: []string{"wal_volume_above_high_watermark"},
				WALVolumeUsedPct: 81.5, HighWatermarkPct: 80, ResumeBelowPct: 75,
				Datasets: map[string]ConsumerDataset{
					"orders": {
						Topic: "orders", ConsumerGroup: "ingestor-orders", SegmentsOpen: 3, PartitionsAssigned: 2,
						Paused: true, PausedReasons: []string{"disk", "operator"},
						LagRecords: map[string]float64{"0": 5, "1": 7}, LagRecordsTotal: 12,
						Records: 100, Dropped: map[string]float64{"not_json": 1},
						UnassignedPartitions: 1, Stalled: []string{"unassigned"},
						OperatorPause: &entry,
					},
					"clicks": {PausedReasons: []string{}, LagRecords: map[string]float64{}, Dropped: map[string]float64{}, Stalled: []string{}},
				},
			}}},
			wire: `{"role":"consumer","pid":11,"metrics_address":"127.0.0.1:9401","state":"running","details":{
				"paused":true,"paused_reasons":["wal_volume_above_high_watermark"],
				"wal_volume_used_pct":81.5,"high_watermark_pct":80,"resume_below_pct":75,
				"datasets":{
					"orders":{"topic":"orders","consumer_group":"ingestor-orders","segments_open":3,"partitions_assigned":2,
						"paused":true,"paused_reasons":["disk","operator"],
						"lag_records":{"0":5,"1":7},"lag_records_total":12,"records":100,"dropped":{"not_json":1},
						"unassigned_partitions":1,"stalled":["unassigned"],
						"operator_pause":{"by":"alice (uid 1000)","reason":"catalog migration","since":"2026-12-02T09:30:00Z"}},
					"clicks":{"topic":"","consumer_group":"","segments_open":0,"partitions_assigned":0,"paused":false,"paused_reasons":[],
						"lag_records":{},"lag_records_total":0,"records":0,"dropped":{},"unassigned_partitions":0,"stalled":[]}}}}`,
		},
		{
			name: "uploader",
			st: Status{Role: "uploader", PID: 12, Time: at, Details: Details{Uploader: &Uploader{Datasets: map[string]UploaderDataset{
				"clicks": {PendingFiles: 4, UploadingFiles: 2, RetryingFiles: 1, FilesUploaded: 90, BytesUploaded: 1e6, UploadFailures: 3},
			}}}},
			wire: `{"role":"uploader","pid":12,"time":"2026-12-02T09:30:00Z","details":{"datasets":{"clicks":{
				"pending_files":4,"uploading_files":2,"retrying_files":1,"files_uploaded":90,"bytes_uploaded":1000000,"upload_failures":3}}}}`,
		},
		{
			name: "committer",
			st: Status{Role: "committer", PID: 13, Time: at, Details: Details{Committer: &Committer{IntervalSeconds: 20, Datasets: map[string]CommitterDataset{
				"clicks": {
					Table: "web.clicks", Commits: 7, FilesWaitingOffsetCommit: 2, AppendsStopped: true,
					SegmentsHandedBack: map[string]float64{"missing": 3}, SegmentsObjectMissing: 1,
					LastCommit: atNs, LastCommitAgeSeconds: ptr(3.5),
					LastError: &CommitError{Time: at, AgeSeconds: 125, Reason: "unknown", Step: "commit outcome unknown", Error: "deadline"},
				},
				"orders": {Table: "shop.orders"},
			}}}},
			wire: `{"role":"committer","pid":13,"time":"2026-12-02T09:30:00Z","details":{"interval_seconds":20,"datasets":{
				"clicks":{"table":"web.clicks","commits":7,"files_waiting_offset_commit":2,"appends_stopped":true,
					"segments_handed_back":{"missing":3},"segments_object_missing":1,
					"last_commit":"2026-12-02T09:30:00.123456789Z","last_commit_age_seconds":3.5,
					"last_error":{"time":"2026-12-02T09:30:00Z","age_seconds":125,"reason":"unknown","step":"commit outcome unknown","error":"deadline"}},
				"orders":{"table":"shop.orders","commits":0,"files_waiting_offset_commit":0,"appends_stopped":false,"segments_object_missing":0}}}}`,
		},
		{
			name: "maintainer",
			st: Status{Role: "maintainer", PID: 14, Time: at, Details: Details{Maintainer: &Maintainer{IntervalSeconds: 300, Datasets: map[string]MaintainerDataset{
				"clicks": {
					Table: "web.clicks", SnapshotsExpired: 9,
					Snapshots: ptr(4.0), MetadataBytes: ptr(1500.0), Manifests: ptr(2.0), DataFiles: ptr(30.0), SmallFiles: ptr(5.0), RewrittenBytes: ptr(0.0),
					LastLoad:      &StepOutcome{LastSuccess: at},
					LastExpire:    &StepOutcome{LastSuccess: atNs},
					LastManifests: &StepOutcome{LastError: &StepError{Time: at, AgeSeconds: 1, Error: "conflict"}},
					LastCompact:   &StepOutcome{LastSuccess: at, LastError: &StepError{Time: at, AgeSeconds: 2, Error: "read"}},
					LastOrphans:   &StepOutcome{LastSuccess: at},
				},
				"orders": {Table: "shop.orders"},
			}}}},
			wire: `{"role":"maintainer","pid":14,"time":"2026-12-02T09:30:00Z","details":{"interval_seconds":300,"datasets":{
				"clicks":{"table":"web.clicks","snapshots_expired":9,
					"snapshots":4,"metadata_bytes":1500,"manifests":2,"data_files":30,"small_files":5,"rewritten_bytes":0,
					"last_load":{"last_success":"2026-12-02T09:30:00Z"},
					"last_expire":{"last_success":"2026-12-02T09:30:00.123456789Z"},
					"last_manifests":{"last_error":{"time":"2026-12-02T09:30:00Z","age_seconds":1,"error":"conflict"}},
					"last_compact":{"last_success":"2026-12-02T09:30:00Z","last_error":{"time":"2026-12-02T09:30:00Z","age_seconds":2,"error":"read"}},
					"last_orphans":{"last_success":"2026-12-02T09:30:00Z"}},
				"orders":{"table":"shop.orders","snapshots_expired":0}}}}`,
		},
		{
			name: "no details",
			st:   Status{Role: "uploader", PID: 12, Time: at},
			wire: `{"role":"uploader","pid":12,"time":"2026-12-02T09:30:00Z"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.st)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.wire), &want); err != nil {
				t.Fatalf("test wire form: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("wire form:\n got %s\nwant %s", b, compact(t, tt.wire))
			}
			var back Status
			if err := json.Unmarshal([]byte(tt.wire), &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.st) {
				t.Errorf("decoded:\n got %+v\nwant %+v", back, tt.st)
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDetailsErrors(t *testing.T) {
	var st Status
	err := json.Unmarshal([]byte(`{"role":"janitor","pid":1,"details":{"n":1}}`), &st)
	if err == nil || !strings.Contains(err.Error(), `"janitor"`) {
		t.Errorf("details of an unknown role: %v, want an error naming it", err)
	}
	err = json.Unmarshal([]byte(`{"role":"committer","pid":1,"details":{"interval_seconds":"soon"}}`), &st)
	if err == nil || !strings.Contains(err.Error(), "status details of committer") {
		t.Errorf("committer details of the wrong type: %v, want an error", err)
	}
	if err := json.Unmarshal([]byte(`{"role":"janitor","pid":1}`), &st); err != nil || st.Role != "janitor" || !st.Details.IsZero() {
		t.Errorf("an envelope without details = %+v, %v; want it decoded", st, err)
	}
	two := Status{Role: "consumer", Details: Details{Consumer: &Consumer{}, Uploader: &Uploader{}}}
	if _, err := json.Marshal(two); err == nil {
		t.Error("details with two bodies encoded, want an error")
	}
}
