package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// The development account every Azurite instance serves; the key is public
// and documented by Microsoft, not a secret.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// azuriteStartTimeout bounds how long Start waits for Azurite to answer.
const azuriteStartTimeout = 60 * time.Second

// Azurite is Microsoft's Azure Blob Storage emulator (the npm package
// azurite) running as a child process on 127.0.0.1. Its data lives in a
// directory, so Stop and Start again on the same port keep every blob:
// tests use that to simulate a storage outage.
type Azurite struct {
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// StartAzurite starts azurite-blob with its data in dir on a free port and
// waits until it answers. The binary is $AZURITE_BIN, else
// node_modules/.bin/azurite-blob under the repository root, else
// azurite-blob on PATH.
func StartAzurite(ctx context.Context, dir string) (*Azurite, error) {
	bin, err := azuriteBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("azurite data dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("azurite port: %w", err)
	}
	a := &Azurite{bin: bin, dir: dir, port: port}
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// azuriteBinary finds azurite-blob; the error tells how to install it.
func azuriteBinary() (string, error) {
	if bin := os.Getenv("AZURITE_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("AZURITE_BIN=%s: %w (run `make deps` to install Azurite)", bin, err)
		}
		return bin, nil
	}
	if root, err := repoRoot(); err == nil {
		bin := filepath.Join(root, "node_modules", ".bin", "azurite-blob")
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	bin, err := exec.LookPath("azurite-blob")
	if err != nil {
		return "", errors.New("azurite-blob not found in node_modules/.bin, $AZURITE_BIN or PATH: run `make deps` (it runs npm install azurite)")
	}
	return bin, nil
}

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts Azurite again after Stop, on the same port and directory,
// and waits until it answers. Starting a running instance is an error.
func (a *Azurite) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		return errors.New("azurite already running")
	}
	logPath := filepath.Join(a.dir, "azurite.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("azurite log: %w", err)
	}
	// The child owns its copy of the descriptor; ours closes at once.
	defer logf.Close()
	cmd := exec.Command(a.bin,
		"--blobHost", "127.0.0.1",
		"--blobPort", strconv.Itoa(a.port),
		"--location", a.dir,
		"--skipApiVersionCheck",
		"--loose",
		"--disableTelemetry",
	)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = azuriteProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start azurite %s: %w", a.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	a.cmd, a.exited = cmd, exited

	if err := a.waitReady(ctx, exited, logPath); err != nil {
		a.stopLocked()
		return err
	}
	return nil
}

// waitReady polls the blob endpoint until it answers any HTTP response.
func (a *Azurite) waitReady(ctx context.Context, exited <-chan struct{}, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, azuriteStartTimeout)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	url := a.Endpoint() + "?comp=list"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("azurite exited at start: %s", lastLines(logPath, 5))
		case <-ctx.Done():
			return fmt.Errorf("azurite on port %d did not answer: %w (log: %s)", a.port, ctx.Err(), lastLines(logPath, 5))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastLines returns the end of a log file for an error message.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Stop stops Azurite gracefully (it saves its metadata on SIGTERM), killing
// it after 10 s. Its data stays in the directory. Stopping a stopped
// instance does nothing.
func (a *Azurite) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

func (a *Azurite) stopLocked() error {
	if a.cmd == nil {
		return nil
	}
	cmd, exited := a.cmd, a.exited
	a.cmd, a.exited = nil, nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill azurite: %w", err)
	}
	<-exited
	return nil
}

// Port returns the port Azurite listens on.
func (a *Azurite) Port() int { return a.port }

// Host returns 127.0.0.1:port, the value of the adls.endpoint property.
func (a *Azurite) Host() string { return "127.0.0.1:" + strconv.Itoa(a.port) }

// Endpoint returns the blob service URL of the development account.
func (a *Azurite) Endpoint() string { return "http://" + a.Host() + "/" + AzuriteAccount }

// Account returns the development account's name.
func (a *Azurite) Account() string { return AzuriteAccount }

// Key returns the development account's well-known key.
func (a *Azurite) Key() string { return AzuriteKey }

// ConnectionString returns a connection string for the development account.
func (a *Azurite) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + AzuriteAccount +
		";AccountKey=" + AzuriteKey + ";BlobEndpoint=" + a.Endpoint() + ";"
}

// Properties returns the catalog properties (the adls.* keys iceberg-go's
// Azure file IO and shared/storage read) that reach this instance with the
// shared key.
func (a *Azurite) Properties() map[string]string {
	return map[string]string{
		"adls.auth.shared-key.account.name": AzuriteAccount,
		"adls.auth.shared-key.account.key":  AzuriteKey,
		"adls.endpoint":                     a.Host(),
		"adls.protocol":                     "http",
	}
}

// Location returns the abfs:// URI of path in container, as a table
// location or data file path records it.
func (a *Azurite) Location(container, path string) string {
	return "abfs://" + container + "@" + AzuriteAccount + ".dfs.core.windows.net/" + strings.TrimPrefix(path, "/")
}

// CreateContainer creates a container; one that exists already is fine.
func (a *Azurite) CreateContainer(ctx context.Context, name string) error {
	// An own transport, closed on return, leaves no idle connection (and
	// no goroutine) behind for goleak to find.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	opts := &azblob.ClientOptions{}
	opts.Transport = &http.Client{Transport: tr}
	c, err := azblob.NewClientFromConnectionString(a.ConnectionString(), opts)
	if err != nil {
		return fmt.Errorf("azurite client: %w", err)
	}
	if _, err := c.CreateContainer(ctx, name, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s: %w", name, err)
	}
	return nil
}
