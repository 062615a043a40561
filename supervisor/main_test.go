package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"testing"

	"go.uber.org/goleak"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/rolestatus"
	"github.com/icewal/ingestor/shared/rpc"
	"github.com/icewal/ingestor/shared/walfile"
)

// Environment that turns the test binary into a test role (as a child of
// a supervisor) or into a supervisor process.
const (
	envTestRole   = "INGESTOR_SUPERVISOR_TEST_ROLE"
	envTestDir    = "INGESTOR_SUPERVISOR_TEST_DIR"
	envTestHang   = "INGESTOR_SUPERVISOR_TEST_HANG"
	envSupervisor = "INGESTOR_SUPERVISOR_TEST_PROCESS"
)

func TestMain(m *testing.M) {
	if rpc.IsChild() && os.Getenv(envTestRole) != "" {
		serveTestRole(os.Getenv(envTestRole), os.Getenv(envTestDir))
		return
	}
	if os.Getenv(envSupervisor) != "" {
		os.Exit(runTestSupervisor(os.Getenv(envTestDir)))
	}
	goleak.VerifyTestMain(m)
}

// testCommand re-executes the test binary as the test role.
func testCommand(dir string, env ...string) func(string) *exec.Cmd {
	return func(roleName string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envTestRole+"="+roleName, envTestDir+"="+dir)
		cmd.Env = append(cmd.Env, env...)
		return cmd
	}
}

// serveTestRole is a role that behaves, as far as the supervisor can see,
// like the real ones: it holds its WAL directory lock while it runs, and
// its drain waits for the upstream roles' locks as the uploader's and the
// committer's final passes do. In dir it writes <role>.pid at start,
// <role>.heartbeat (a count) every 50ms, and <role>.drained (the time in
// ns) at the end of its drain, before releasing its lock. On demand it
// fails at start (<role>.fail exists: removed, then the run fails) or
// ignores the drain (its name is in envTestHang).
func serveTestRole(name, dir string) {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("role", name)
	var beats atomic.Int64
	run := func(ctx context.Context) error {
		if err := os.Remove(filepath.Join(dir, name+".fail")); err == nil {
			time.Sleep(300 * time.Millisecond)
			return errors.New("failing on demand")
		}
		lock, err := walfile.AcquireLock(dir, name)
		if err != nil {
			return err
		}
		defer lock.Release()
		if err := walfile.WriteAtomic(dir, name+".pid", []byte(strconv.Itoa(os.Getpid()))); err != nil {
			return err
		}
		log.Info("test role running")
		go func() {
			for ctx.Err() == nil {
				n := beats.Add(1)
				_ = walfile.WriteAtomic(dir, name+".heartbeat", []byte(strconv.FormatInt(n, 10)))
				time.Sleep(50 * time.Millisecond)
			}
		}()
		<-ctx.Done()
		if strings.Contains(os.Getenv(envTestHang), name) {
			select {}
		}
		var upstream []string
		switch name {
		case role.Consumer:
			time.Sleep(200 * time.Millisecond) // releasing the partitions
		case role.Uploader:
			upstream = []string{role.Consumer}
		case role.Committer:
			upstream = []string{role.Consumer, role.Uploader}
		}
		for _, up := range upstream {
			for walfile.Held(dir, up) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		log.Info("test role drained")
		return walfile.WriteAtomic(dir, name+".drained", []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
	}
	status := func() rolestatus.Details { return testStatus(name, float64(beats.Load())) }
	opts := []rpc.ChildOption{rpc.WithLogger(log)}
	if name == role.Consumer {
		opts = append(opts, rpc.WithPauser(&testPauser{dir: dir, paused: map[string]pause.Entry{}}))
	}
	// A child writing to the stderr of a dead supervisor dies of SIGPIPE;
	// ignoring it here keeps the orphan test about Pdeathsig and the
	// parent check.
	signal.Ignore(syscall.SIGPIPE)
	rpc.ServeChild(name, run, status, opts...)
}

// testStatus is a test role's status: its body, with the heartbeats it
// wrote as the orders dataset's count of records, files or commits.
func testStatus(name string, beats float64) rolestatus.Details {
	switch name {
	case role.Consumer:
		return rolestatus.Details{Consumer: &rolestatus.Consumer{Datasets: map[string]rolestatus.ConsumerDataset{"orders": {Records: beats}}}}
	case role.Uploader:
		return rolestatus.Details{Uploader: &rolestatus.Uploader{Datasets: map[string]rolestatus.UploaderDataset{"orders": {FilesUploaded: beats}}}}
	case role.Committer:
		return rolestatus.Details{Committer: &rolestatus.Committer{Datasets: map[string]rolestatus.CommitterDataset{"orders": {Commits: beats}}}}
	}
	return rolestatus.Details{Maintainer: &rolestatus.Maintainer{Datasets: map[string]rolestatus.MaintainerDataset{"orders": {SnapshotsExpired: beats}}}}
}

// testPauser is the test consumer's side of Pause and Resume: it writes
// "<pid>:<paused datasets, sorted, comma separated>" to consumer.paused
// after each call.
type testPauser struct {
	dir    string
	mu     sync.Mutex
	paused map[string]pause.Entry
}

func (p *testPauser) Pause(_ context.Context, dataset string, e pause.Entry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused[dataset] = e
	return p.writeLocked()
}

func (p *testPauser) Resume(_ context.Context, dataset string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.paused, dataset)
	return p.writeLocked()
}

func (p *testPauser) writeLocked() error {
	names := slices.Sorted(maps.Keys(p.paused))
	return walfile.WriteAtomic(p.dir, role.Consumer+".paused", []byte(fmt.Sprintf("%d:%s", os.Getpid(), strings.Join(names, ","))))
}

func testConfig(dir string, drain time.Duration) *config.Config {
	return &config.Config{Ingestion: config.Ingestion{
		DrainTimeoutSeconds: drain.Seconds(),
		WAL:                 config.WAL{Dir: dir},
	}, Datasets: []config.Dataset{{Name: "orders"}, {Name: "clicks"}}}
}

// runTestSupervisor runs a supervisor of test roles until SIGTERM.
func runTestSupervisor(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := New(testConfig(dir, 10*time.Second), "", Options{Command: testCommand(dir)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
