package rpc

import (
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// StartTimeout bounds how long a child may take to answer the handshake.
const StartTimeout = time.Minute

// NewClient returns an unstarted go-plugin client for one child: cmd is the
// child's command (its SysProcAttr is the caller's business), and go-plugin's
// own messages go to logger. The child's stderr, and anything it prints on
// stdout or stderr after the handshake, go to stderr as whole lines, one per
// Write, from several goroutines at once: stderr must be safe for
// concurrent use, as an *os.File is. The client is not managed: its owner
// must Kill it, also after the child exited by itself, to close the gRPC
// connection. Kill asks the child's gRPC server to shut down; a child that
// is draining finishes its drain all the same, but Kill waits for that
// only 2 s before it kills the process.
func NewClient(cmd *exec.Cmd, stderr io.Writer, logger hclog.Logger) *plugin.Client {
	return plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{PluginName: &RolePlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          false,
		StartTimeout:     StartTimeout,
		Stderr:           &lineWriter{out: stderr},
		SyncStdout:       &lineWriter{out: stderr},
		SyncStderr:       &lineWriter{out: stderr},
		Logger:           logger,
	})
}

// Dispense starts the child if it has not started yet, completes the
// handshake and returns the Role it serves.
func Dispense(c *plugin.Client) (Role, error) {
	proto, err := c.Client()
	if err != nil {
		return nil, fmt.Errorf("connect to child: %w", err)
	}
	raw, err := proto.Dispense(PluginName)
	if err != nil {
		return nil, fmt.Errorf("dispense %s: %w", PluginName, err)
	}
	r, ok := raw.(Role)
	if !ok {
		return nil, fmt.Errorf("dispense %s: got %T, not a Role", PluginName, raw)
	}
	return r, nil
}
