package rpc

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/stats"
)

// inflight counts the Role calls a child is serving, as gRPC's stats
// report them: a call ends once its answer was handed to the transport.
// A child that is about to exit waits for the calls under way, so that
// the answer to a Drain, or to a Pause that made the role fail, reaches
// the supervisor.
type inflight struct {
	mu      sync.Mutex
	n       int
	lastEnd time.Time
}

var _ stats.Handler = (*inflight)(nil)

type roleCallKey struct{}

// TagRPC marks the calls of the Role service; go-plugin's own services
// (the stdio stream, the broker, the controller) are not counted.
func (f *inflight) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if strings.HasPrefix(info.FullMethodName, "/"+roleServiceName+"/") {
		return context.WithValue(ctx, roleCallKey{}, true)
	}
	return ctx
}

// HandleRPC counts the begin and the end of marked calls.
func (f *inflight) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if ctx.Value(roleCallKey{}) == nil {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
	case *stats.End:
		f.mu.Lock()
		f.n--
		f.lastEnd = time.Now()
		f.mu.Unlock()
	}
}

// TagConn implements stats.Handler.
func (f *inflight) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn implements stats.Handler.
func (f *inflight) HandleConn(context.Context, stats.ConnStats) {}

// settle waits, for at most limit, until no call is being served and the
// last answer had flush to leave: the transport writes answers shortly
// after the call ends.
func (f *inflight) settle(limit, flush time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		f.mu.Lock()
		n, last := f.n, f.lastEnd
		f.mu.Unlock()
		now := time.Now()
		if now.After(deadline) {
			return
		}
		if n == 0 {
			if wait := last.Add(flush).Sub(now); wait > 0 {
				time.Sleep(min(wait, deadline.Sub(now)))
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
