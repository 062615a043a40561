package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	netrpc "net/rpc"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-plugin"
)

// RolePlugin is the go-plugin Plugin that carries a Role over net/rpc. The
// child sets Impl; the supervisor leaves it nil and gets a client.
type RolePlugin struct {
	// Impl is the role served by a child.
	Impl Role
}

var _ plugin.Plugin = (*RolePlugin)(nil)

// Server returns the net/rpc receiver for the child's Role.
func (p *RolePlugin) Server(*plugin.MuxBroker) (any, error) {
	if p.Impl == nil {
		return nil, errors.New("role plugin: no implementation to serve")
	}
	return &rpcServer{impl: p.Impl}, nil
}

// Client returns a Role that calls the child over c.
func (p *RolePlugin) Client(_ *plugin.MuxBroker, c *netrpc.Client) (any, error) {
	return &rpcClient{c: c}, nil
}

// rpcServer adapts a Role to net/rpc. net/rpc wants every exported method
// to be an RPC method, so helpers stay unexported. The argument of every
// call is the time the caller's context had left, in nanoseconds (0: no
// deadline).
type rpcServer struct{ impl Role }

// Drain is the RPC side of Role.Drain.
func (s *rpcServer) Drain(timeout int64, _ *struct{}) (err error) {
	defer recoverAsError("drain", &err)
	ctx, cancel := timeoutContext(timeout)
	defer cancel()
	return s.impl.Drain(ctx)
}

// Status is the RPC side of Role.Status; the reply is the Status as JSON,
// so that Details may hold any JSON value without gob registrations.
func (s *rpcServer) Status(timeout int64, reply *[]byte) (err error) {
	defer recoverAsError("status", &err)
	ctx, cancel := timeoutContext(timeout)
	defer cancel()
	st, err := s.impl.Status(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	*reply = b
	return nil
}

// Pause is the RPC side of Role.Pause.
func (s *rpcServer) Pause(timeout int64, _ *struct{}) (err error) {
	defer recoverAsError("pause", &err)
	ctx, cancel := timeoutContext(timeout)
	defer cancel()
	return s.impl.Pause(ctx)
}

// Resume is the RPC side of Role.Resume.
func (s *rpcServer) Resume(timeout int64, _ *struct{}) (err error) {
	defer recoverAsError("resume", &err)
	ctx, cancel := timeoutContext(timeout)
	defer cancel()
	return s.impl.Resume(ctx)
}

func timeoutContext(timeout int64) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(timeout))
}

// recoverAsError turns a panic in a served method into the call's error:
// a panic must not take the child down through the RPC server.
func recoverAsError(method string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: panic: %v\n%s", method, r, debug.Stack())
	}
}

// rpcClient is the supervisor's side of a child's Role.
type rpcClient struct{ c *netrpc.Client }

var _ Role = (*rpcClient)(nil)

// call sends one request and waits for its answer or for ctx to end. On
// ctx's end the request is abandoned, not cancelled: net/rpc cannot cancel,
// but the child got the same deadline and gives up by itself.
func (r *rpcClient) call(ctx context.Context, method string, reply any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var timeout int64
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return context.DeadlineExceeded
		}
		timeout = int64(left)
	}
	call := r.c.Go("Plugin."+method, timeout, reply, make(chan *netrpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drain implements Role.
func (r *rpcClient) Drain(ctx context.Context) error {
	if err := r.call(ctx, "Drain", new(struct{})); err != nil {
		return fmt.Errorf("rpc drain: %w", err)
	}
	return nil
}

// Status implements Role.
func (r *rpcClient) Status(ctx context.Context) (Status, error) {
	var b []byte
	if err := r.call(ctx, "Status", &b); err != nil {
		return Status{}, fmt.Errorf("rpc status: %w", err)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return Status{}, fmt.Errorf("rpc status: decode: %w", err)
	}
	return st, nil
}

// Pause implements Role.
func (r *rpcClient) Pause(ctx context.Context) error {
	if err := r.call(ctx, "Pause", new(struct{})); err != nil {
		return fmt.Errorf("rpc pause: %w", err)
	}
	return nil
}

// Resume implements Role.
func (r *rpcClient) Resume(ctx context.Context) error {
	if err := r.call(ctx, "Resume", new(struct{})); err != nil {
		return fmt.Errorf("rpc resume: %w", err)
	}
	return nil
}
