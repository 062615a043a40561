package pause

import (
	"context"
	"errors"
	"net"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"
)

func TestEndpoint(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	client := NewClient(dir)
	if _, err := client.State(ctx); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("state with nothing serving = %v, want ErrNotRunning", err)
	}

	// A socket left by a process that died is replaced.
	stale, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	cons := &fakeConsumer{paused: map[string]Entry{}}
	c, err := NewController(dir, []string{"orders", "clicks"}, func() Applier { return cons }, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(dir)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- Serve(sctx, l, c, nil) }()

	info, err := os.Stat(SocketPath(dir))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", info.Mode(), err)
	}
	if _, err := Listen(dir); err == nil || !strings.Contains(err.Error(), "another process serves it") {
		t.Fatalf("second listen = %v, want refused", err)
	}

	a, err := client.Pause(ctx, []string{"orders"}, "catalog migration")
	if err != nil || !a.Applied {
		t.Fatalf("pause = %+v, %v", a, err)
	}
	me, _ := user.Current()
	if by := a.Paused["orders"].By; !strings.Contains(by, "uid "+me.Uid) {
		t.Fatalf("paused by %q, want this process's uid %s as the kernel tells it", by, me.Uid)
	}
	if time.Since(a.Paused["orders"].Since) > time.Minute || a.Paused["orders"].Reason != "catalog migration" {
		t.Fatalf("entry = %+v", a.Paused["orders"])
	}
	var re *RequestError
	if _, err := client.Resume(ctx, []string{"nope"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "orders, clicks") {
		t.Fatalf("resume of an unknown dataset = %v, want a RequestError listing the datasets", err)
	}
	st, err := client.State(ctx)
	if err != nil || len(st.Paused) != 1 {
		t.Fatalf("state = %+v, %v", st, err)
	}

	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(SocketPath(dir)); !os.IsNotExist(err) {
		t.Fatalf("socket left after the server stopped: %v", err)
	}
}
