package failpoint

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// want is what parse should arm for one point.
type want struct {
	nth    int64
	prob   float64
	marker string
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	fired := filepath.Join(dir, "fired")
	if err := os.WriteFile(fired, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    string
		want    map[string]want
		wantErr string
	}{
		{name: "count", spec: "consumer.after-rename=1",
			want: map[string]want{"consumer.after-rename": {nth: 1}}},
		{name: "several with spaces", spec: " uploader.before-marker=3 , committer.after-append=p0.25 ,",
			want: map[string]want{"uploader.before-marker": {nth: 3}, "committer.after-append": {prob: 0.25}}},
		{name: "marker", spec: "consumer.before-rename=2@" + filepath.Join(dir, "m"),
			want: map[string]want{"consumer.before-rename": {nth: 2, marker: filepath.Join(dir, "m")}}},
		{name: "marker already there disarms", spec: "consumer.before-rename=1@" + fired + ",uploader.after-marker=1",
			want: map[string]want{"uploader.after-marker": {nth: 1}}},
		{name: "unknown name", spec: "consumer.after-renam=1", wantErr: `unknown failpoint "consumer.after-renam"`},
		{name: "no trigger", spec: "consumer.after-rename", wantErr: "want name=N"},
		{name: "zero count", spec: "consumer.after-rename=0", wantErr: "not a whole number >= 1"},
		{name: "bad count", spec: "consumer.after-rename=x", wantErr: "not a whole number >= 1"},
		{name: "probability above 1", spec: "consumer.after-rename=p2", wantErr: "not in (0, 1]"},
		{name: "probability zero", spec: "consumer.after-rename=p0", wantErr: "not in (0, 1]"},
		{name: "twice", spec: "consumer.after-rename=1,consumer.after-rename=2", wantErr: "named twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parse(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse(%q) = %v, want error containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.spec, err)
			}
			if len(s.points) != len(tt.want) {
				t.Fatalf("parse(%q) armed %d points, want %d", tt.spec, len(s.points), len(tt.want))
			}
			for name, w := range tt.want {
				p := s.points[name]
				if p == nil {
					t.Fatalf("parse(%q): %s not armed", tt.spec, name)
				}
				if p.nth != w.nth || p.prob != w.prob || p.marker != w.marker {
					t.Errorf("%s: nth=%d prob=%v marker=%q, want %d %v %q", name, p.nth, p.prob, p.marker, w.nth, w.prob, w.marker)
				}
			}
		})
	}
}

// errExit stands for the process exit in tests: the recording exit panics
// with it, so that Hit does not return, as after the real os.Exit.
var errExit = errors.New("exited")

// armed parses spec into a set whose exit is recorded instead of done.
func armed(t *testing.T, spec string) (*set, *bytes.Buffer, *[]int) {
	t.Helper()
	s, err := parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var codes []int
	s.stderr = &out
	s.exit = func(code int) {
		codes = append(codes, code)
		panic(errExit)
	}
	return s, &out, &codes
}

// hits calls s.hit and reports whether it exited.
func hits(s *set, name string) (exited bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errExit {
				panic(r)
			}
			exited = true
		}
	}()
	s.hit(name)
	return false
}

func TestHitCount(t *testing.T) {
	s, out, codes := armed(t, "consumer.after-rename=3")
	var fired []int
	for i := 1; i <= 5; i++ {
		if hits(s, ConsumerAfterRename) {
			fired = append(fired, i)
		}
		if hits(s, ConsumerBeforeRename) {
			t.Fatal("a point that is not armed fired")
		}
	}
	if len(fired) != 1 || fired[0] != 3 {
		t.Fatalf("fired at hits %v, want [3]", fired)
	}
	if len(*codes) != 1 || (*codes)[0] != ExitCode {
		t.Fatalf("exit codes %v, want [%d]", *codes, ExitCode)
	}
	if want := "failpoint consumer.after-rename hit (3): exiting with code 77\n"; out.String() != want {
		t.Fatalf("stderr %q, want %q", out.String(), want)
	}
}

func TestHitMarkerFiresOnceAcrossProcesses(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "fired")
	spec := "uploader.before-marker=1@" + marker
	// Two processes armed before either fired, as two instances started
	// together: only the first to reach the point crashes.
	a, _, _ := armed(t, spec)
	b, _, _ := armed(t, spec)
	if !hits(a, UploaderBeforeMarker) {
		t.Fatal("first process did not fire")
	}
	if hits(b, UploaderBeforeMarker) {
		t.Fatal("second process fired although the marker exists")
	}
	content, err := os.ReadFile(marker)
	if err != nil || !strings.HasPrefix(string(content), "uploader.before-marker pid=") {
		t.Fatalf("marker content %q, err %v", content, err)
	}
	// A process started after the crash, as a restarted child.
	c, _, _ := armed(t, spec)
	if len(c.points) != 0 {
		t.Fatal("a process started after the marker was written is armed")
	}
}

func TestHitMarkerUnwritable(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "no-such-dir", "fired")
	s, out, _ := armed(t, "committer.after-append=1@"+marker)
	if hits(s, CommitterAfterAppend) {
		t.Fatal("fired although the marker cannot be created")
	}
	if !strings.Contains(out.String(), "not firing") {
		t.Fatalf("stderr %q does not say why it did not fire", out.String())
	}
}

func TestHitProbability(t *testing.T) {
	always, _, _ := armed(t, "committer.after-append=p1")
	if !hits(always, CommitterAfterAppend) {
		t.Fatal("p1 did not fire")
	}
	half, _, _ := armed(t, "committer.after-append=p0.5")
	n := 0
	for i := 0; i < 2000; i++ {
		if hits(half, CommitterAfterAppend) {
			n++
		}
	}
	if n < 800 || n > 1200 {
		t.Fatalf("p0.5 fired %d times in 2000 hits", n)
	}
}

func TestHitDisabled(t *testing.T) {
	if os.Getenv(EnvVar) != "" {
		t.Skip("the environment arms failpoints")
	}
	if Enabled() {
		t.Fatal("enabled without the variable")
	}
	for _, name := range Names() {
		Hit(name) // returns
	}
}

// TestProcessExit runs the test binary as a child with the variable set and
// checks the real exit: code 77, one stderr line naming the point, and
// nothing after the point running.
func TestProcessExit(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		Hit(ConsumerBeforeRename)
		Hit(ConsumerAfterRename)
		os.Stdout.WriteString("after the failpoint\n")
		os.Exit(0)
	}
	marker := filepath.Join(t.TempDir(), "fired")
	run := func() (int, string, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessExit$")
		cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvVar+"=consumer.after-rename=1@"+marker)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run()
	if code != ExitCode {
		t.Fatalf("exit code %d, want %d; stderr %q", code, ExitCode, stderr)
	}
	if strings.Contains(stdout, "after the failpoint") {
		t.Fatal("code after the failpoint ran")
	}
	if want := "failpoint consumer.after-rename hit (1): exiting with code 77\n"; stderr != want {
		t.Fatalf("stderr %q, want %q", stderr, want)
	}
	// The restarted process inherits the variable but the marker disarms it.
	code, stdout, _ = run()
	if code != 0 || !strings.Contains(stdout, "after the failpoint") {
		t.Fatalf("second run: exit %d, stdout %q; want 0 and the line after the failpoint", code, stdout)
	}
}

// TestMalformedVariableExits checks that a typo in the variable stops the
// process instead of silently arming nothing.
func TestMalformedVariableExits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitDisabled$")
	cmd.Env = append(os.Environ(), EnvVar+"=consumer.after-renme=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want code 2; output %q", err, out)
	}
	if !strings.Contains(string(out), "unknown failpoint") {
		t.Fatalf("output %q does not name the problem", out)
	}
}

// BenchmarkHitDisabled is the cost of a failpoint in production: the
// variable is not set.
func BenchmarkHitDisabled(b *testing.B) {
	if Enabled() {
		b.Skip("the environment arms failpoints")
	}
	for b.Loop() {
		Hit(ConsumerAfterRename)
	}
}

// BenchmarkHitArmedElsewhere is the cost when the variable arms another
// point: a map lookup.
func BenchmarkHitArmedElsewhere(b *testing.B) {
	s, err := parse("uploader.before-marker=1")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.hit(ConsumerAfterRename)
	}
}
