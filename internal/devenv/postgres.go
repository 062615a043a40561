//go:build linux

package devenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresDatabase is the database StartPostgres creates for the catalog.
const PostgresDatabase = "ingestor"

// postgresStartTimeout bounds how long Start waits for PostgreSQL to answer.
const postgresStartTimeout = 60 * time.Second

// Postgres is a PostgreSQL server (Debian's postgresql package) running as
// a child process on 127.0.0.1, with its data directory, unix socket and
// log inside one directory. Stop and Start again keep the data and the
// port: tests use that to simulate a catalog outage.
//
// PostgreSQL refuses to run as root; when the test runs as root, the
// server runs as the postgres OS user (or nobody) and the directory is
// handed to that user.
type Postgres struct {
	bin  string // directory holding initdb and postgres
	dir  string
	port int
	cred *syscall.Credential // nil when not running as root

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// StartPostgres creates a cluster in dir (initdb, trust authentication for
// the superuser postgres), starts it on a free port and creates the
// database PostgresDatabase. The binaries come from the newest
// /usr/lib/postgresql/*/bin, else from PATH.
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	bin, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sock"), 0o755); err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	p := &Postgres{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if p.cred, err = postgresUser(); err != nil {
			return nil, err
		}
		if err := handOver(dir, p.cred); err != nil {
			return nil, err
		}
	}
	if p.port, err = freePort(); err != nil {
		return nil, fmt.Errorf("postgres port: %w", err)
	}
	if err := p.initdb(ctx); err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	if err := p.createDatabase(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// postgresBinaries finds the directory of initdb and postgres; the error
// tells how to install them.
func postgresBinaries() (string, error) {
	return findPostgresBinaries("/usr/lib/postgresql/*/bin")
}

// findPostgresBinaries looks in the directories matching pattern, then on PATH.
func findPostgresBinaries(pattern string) (string, error) {
	dirs, _ := filepath.Glob(pattern)
	// Newest major version first: compare the version numerically.
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		d := filepath.Dir(initdb)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin or PATH: run `make deps` (it installs Debian's postgresql package)")
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// postgresUser returns the credentials of the postgres OS user, or of
// nobody when there is none.
func postgresUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root and no postgres or nobody OS user to run PostgreSQL as (PostgreSQL refuses root)")
}

// handOver gives dir and everything in it to the server's user, and makes
// sure that user can reach dir: a test's temporary directory sits in a
// 0700 directory of root's, which gets the search bit (not the read bit)
// for others. Only directories under the system temporary directory are
// changed that way; elsewhere an unreachable parent is an error.
func handOver(dir string, cred *syscall.Credential) error {
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("give postgres dir to uid %d: %w", cred.Uid, err)
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		tmp = os.TempDir()
	}
	for p := filepath.Dir(dir); p != filepath.Dir(p); p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("postgres dir parent: %w", err)
		}
		if st.Mode().Perm()&0o001 != 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		if !strings.HasPrefix(real, tmp+string(filepath.Separator)) {
			return fmt.Errorf("postgres dir %s: uid %d cannot reach it through %s: choose a directory under %s", dir, cred.Uid, p, tmp)
		}
		if err := os.Chmod(p, st.Mode().Perm()|0o001); err != nil {
			return fmt.Errorf("let uid %d reach %s: %w", cred.Uid, p, err)
		}
	}
	return nil
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }
func (p *Postgres) sockDir() string { return filepath.Join(p.dir, "sock") }
func (p *Postgres) logPath() string { return filepath.Join(p.dir, "postgres.log") }

// command prepares one of the PostgreSQL binaries, as the server's user,
// killed by the kernel if this process dies, output appended to the log.
func (p *Postgres) command(logf *os.File, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"LC_ALL=C", "LANG=C", "PATH=" + p.bin + ":/usr/bin:/bin", "HOME=" + p.dir}
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (p *Postgres) openLog() (*os.File, error) {
	f, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("postgres log: %w", err)
	}
	return f, nil
}

// initdb creates the cluster unless the data directory holds one already.
func (p *Postgres) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(p.dataDir(), "PG_VERSION")); err == nil {
		return nil
	}
	logf, err := p.openLog()
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.command(logf, "initdb", "-D", p.dataDir(), "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start initdb: %w", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("initdb %s: %w (log: %s)", p.dataDir(), err, lastLines(p.logPath(), 5))
		}
		return nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("initdb: %w", ctx.Err())
	}
}

// Start starts the server again after Stop, on the same port and data
// directory, and waits until it accepts connections. Starting a running
// server is an error.
func (p *Postgres) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("postgres already running")
	}
	logf, err := p.openLog()
	if err != nil {
		return err
	}
	// The child owns its copy of the descriptor; ours closes at once.
	defer logf.Close()
	sock := p.sockDir()
	// A unix socket path is limited to 107 bytes; a deep test directory
	// gets TCP only.
	if len(sock)+len("/.s.PGSQL.65535.lock") > 100 {
		sock = ""
	}
	cmd := p.command(logf, "postgres",
		"-D", p.dataDir(),
		"-p", strconv.Itoa(p.port),
		"-h", "127.0.0.1",
		"-k", sock,
		// Test speed over durability: a test never outlives the machine.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
	)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	if err := p.waitReady(ctx, exited); err != nil {
		p.stopLocked()
		return err
	}
	return nil
}

// waitReady connects until the server answers a query.
func (p *Postgres) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, postgresStartTimeout)
	defer cancel()
	for {
		if err := p.ping(ctx, "postgres"); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited at start: %s", lastLines(p.logPath(), 5))
		case <-ctx.Done():
			return fmt.Errorf("postgres on port %d did not answer: %w (log: %s)", p.port, ctx.Err(), lastLines(p.logPath(), 5))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *Postgres) ping(ctx context.Context, db string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.url(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// createDatabase creates PostgresDatabase unless it exists.
func (p *Postgres) createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", PostgresDatabase).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", PostgresDatabase, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{PostgresDatabase}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", PostgresDatabase, err)
	}
	return nil
}

// Stop shuts the server down (fast shutdown: open sessions are ended),
// killing it after 10 s. The data stays. Stopping a stopped server does
// nothing.
func (p *Postgres) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

func (p *Postgres) stopLocked() error {
	if p.cmd == nil {
		return nil
	}
	cmd, exited := p.cmd, p.exited
	p.cmd, p.exited = nil, nil
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill postgres: %w", err)
	}
	<-exited
	return nil
}

// Port returns the TCP port the server listens on.
func (p *Postgres) Port() int { return p.port }

// DSN returns a pgx URL of the database PostgresDatabase, for the catalog
// property uri with sql.driver pgx and sql.dialect postgres.
func (p *Postgres) DSN() string { return p.url(PostgresDatabase) }

func (p *Postgres) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

// CatalogProperties returns the iceberg-go properties of an SQL catalog
// in this server with its warehouse at warehouse.
func (p *Postgres) CatalogProperties(warehouse string) map[string]string {
	return map[string]string{
		"type":        "sql",
		"uri":         p.DSN(),
		"sql.driver":  "pgx",
		"sql.dialect": "postgres",
		"warehouse":   warehouse,
	}
}
