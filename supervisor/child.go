package supervisor

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/icewal/ingestor/shared/rpc"
)

// exitPoll is how often the supervisor looks whether a child exited;
// go-plugin reaps the process but offers no channel for it.
const exitPoll = 100 * time.Millisecond

// child is one running child process.
type child struct {
	name    string
	cmd     *exec.Cmd
	client  *plugin.Client
	role    rpc.Role
	pid     int
	started time.Time
}

// start starts a role's child and completes the handshake.
func (s *Supervisor) start(roleName string) (*child, error) {
	cmd := s.opts.Command(roleName)
	setProcAttr(cmd)
	client := rpc.NewClient(cmd, s.opts.Stderr, s.pluginLog.With("child", roleName))
	r, err := rpc.Dispense(client)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", roleName, err)
	}
	return &child{
		name:    roleName,
		cmd:     cmd,
		client:  client,
		role:    r,
		pid:     cmd.Process.Pid,
		started: time.Now(),
	}, nil
}

// waitExit returns true when the child has exited, or false when ctx ends
// first.
func (c *child) waitExit(ctx context.Context) bool {
	t := time.NewTicker(exitPoll)
	defer t.Stop()
	for {
		if c.client.Exited() {
			return true
		}
		select {
		case <-ctx.Done():
			return c.client.Exited()
		case <-t.C:
		}
	}
}

// exitStatus describes how the child exited. cmd.ProcessState is set by
// go-plugin's Wait; client.Exited() taking go-plugin's lock after that Wait
// is what makes reading it here safe.
func (c *child) exitStatus() string {
	if !c.client.Exited() || c.cmd.ProcessState == nil {
		return "unknown"
	}
	return c.cmd.ProcessState.String()
}
