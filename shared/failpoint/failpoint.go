package failpoint

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// EnvVar is the environment variable that arms failpoints; see the package doc.
const EnvVar = "INGESTOR_FAILPOINTS"

// ExitCode is the exit status of a process that a failpoint ended.
const ExitCode = 77

// The failpoints of the record path, in record-path order; the package doc
// tells where each one is.
const (
	ConsumerBeforeRename      = "consumer.before-rename"
	ConsumerAfterRoll         = "consumer.after-roll"
	ConsumerBeforeDirSync     = "consumer.before-dir-sync"
	ConsumerAfterRename       = "consumer.after-rename"
	ConsumerAfterCommit       = "consumer.after-commit"
	ConsumerDuringRecovery    = "consumer.during-recovery"
	ConsumerGenerationLost    = "consumer.generation-lost"
	ConsumerBeforeTopicRecord = "consumer.before-topic-record"
	UploaderBeforeObject      = "uploader.before-object"
	UploaderBeforeMarker      = "uploader.before-marker"
	UploaderAfterMarker       = "uploader.after-marker"
	QuarantineBeforeNote      = "quarantine.before-note"
	CommitterAfterDeleteFiles = "committer.after-delete-files"
	CommitterAfterAppend      = "committer.after-append"
	CommitterBetweenDeletes   = "committer.between-deletes"
	CommitterAfterDataset     = "committer.after-dataset"
	CommitterAfterReplace     = "committer.after-replace"
	CommitterAfterHandBack    = "committer.after-hand-back"
	MaintainerAfterExpire     = "maintainer.after-expire"
	MaintainerAfterManifest   = "maintainer.after-manifests"
	MaintainerAfterCompact    = "maintainer.after-compact"
	PauseAfterRecord          = "pause.after-record"
)

// Names returns every failpoint name, in record-path order.
func Names() []string {
	return []string{
		ConsumerBeforeRename, ConsumerAfterRoll, ConsumerBeforeDirSync, ConsumerAfterRename, ConsumerAfterCommit, ConsumerDuringRecovery, ConsumerGenerationLost, ConsumerBeforeTopicRecord,
		UploaderBeforeObject, UploaderBeforeMarker, UploaderAfterMarker, QuarantineBeforeNote,
		CommitterAfterDeleteFiles, CommitterAfterAppend, CommitterBetweenDeletes, CommitterAfterDataset, CommitterAfterReplace, CommitterAfterHandBack,
		MaintainerAfterExpire, MaintainerAfterManifest, MaintainerAfterCompact,
		PauseAfterRecord,
	}
}

// point is one armed failpoint.
type point struct {
	name   string
	nth    int64   // fire at this hit; 0 when prob is used
	prob   float64 // fire at each hit with this probability
	marker string  // fire only if this file can be created
	hits   atomic.Int64
}

// set is the armed failpoints of the process.
type set struct {
	points map[string]*point
	stderr io.Writer
	exit   func(code int)
}

// active is nil unless INGESTOR_FAILPOINTS armed something: Hit's whole
// cost in production is the load of this pointer.
var active atomic.Pointer[set]

// init arms the failpoints the environment names. Failpoints are a
// property of the process, like its environment, hence package state. A
// malformed variable ends the process: a test that believes it armed a
// point which never fires would prove nothing.
func init() {
	spec := os.Getenv(EnvVar)
	if spec == "" {
		return
	}
	s, err := parse(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", EnvVar, err)
		os.Exit(2)
	}
	if len(s.points) == 0 {
		return // every point fired in an earlier process
	}
	s.stderr, s.exit = os.Stderr, os.Exit
	active.Store(s)
}

// Hit is a crash point named name. It returns at once unless the point is
// armed and its trigger says this hit fires: then the process exits with
// ExitCode after writing one line to stderr.
func Hit(name string) {
	s := active.Load()
	if s == nil {
		return
	}
	s.hit(name)
}

// Enabled reports whether any failpoint is armed in this process.
func Enabled() bool { return active.Load() != nil }

func (s *set) hit(name string) {
	p := s.points[name]
	if p == nil {
		return
	}
	n := p.hits.Add(1)
	if p.prob > 0 {
		if rand.Float64() >= p.prob {
			return
		}
	} else if n != p.nth {
		return
	}
	if p.marker != "" {
		f, err := os.OpenFile(p.marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			// Fired before, in this process or another one: stay quiet.
			// Any other error also keeps the point quiet, so that a
			// restarted process does not crash at it forever.
			if !errors.Is(err, os.ErrExist) {
				fmt.Fprintf(s.stderr, "failpoint %s: marker %s: %v: not firing\n", name, p.marker, err)
			}
			return
		}
		fmt.Fprintf(f, "%s pid=%d hit=%d at=%s\n", name, os.Getpid(), n, time.Now().UTC().Format(time.RFC3339Nano))
		f.Close()
	}
	fmt.Fprintf(s.stderr, "failpoint %s hit (%d): exiting with code %d\n", name, n, ExitCode)
	s.exit(ExitCode)
}

// parse reads the variable's value: name=trigger[@marker], comma-separated,
// where trigger is a hit count N >= 1 or a probability pF with 0 < F <= 1.
func parse(spec string) (*set, error) {
	s := &set{points: map[string]*point{}}
	known := Names()
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, trig, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=N, name=pF or either followed by @marker-file", item)
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("%q: unknown failpoint %q (known: %s)", item, name, strings.Join(known, ", "))
		}
		if _, dup := s.points[name]; dup {
			return nil, fmt.Errorf("%q: failpoint %s named twice", item, name)
		}
		p := &point{name: name}
		trig, p.marker, _ = strings.Cut(trig, "@")
		if rest, isProb := strings.CutPrefix(trig, "p"); isProb {
			f, err := strconv.ParseFloat(rest, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return nil, fmt.Errorf("%q: probability %q is not in (0, 1]", item, rest)
			}
			p.prob = f
		} else {
			n, err := strconv.ParseInt(trig, 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q: hit count %q is not a whole number >= 1", item, trig)
			}
			p.nth = n
		}
		if p.marker != "" {
			if _, err := os.Stat(p.marker); err == nil {
				continue // fired in an earlier process: disarmed
			}
		}
		s.points[name] = p
	}
	return s, nil
}
