package pause

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// SocketFile is the name of the control socket in the WAL directory.
const SocketFile = "control.sock"

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path is 108 bytes with its terminating zero).
const maxSocketPath = 107

// Routes of the control endpoint.
const (
	pathPause  = "/v1/pause"
	pathResume = "/v1/resume"
	pathState  = "/v1/pauses"
)

// request is the body of a pause or a resume.
type request struct {
	// Datasets are the datasets to act on; empty means all of them.
	Datasets []string `json:"datasets,omitempty"`
	// Reason is the operator's text, for a pause.
	Reason string `json:"reason,omitempty"`
}

// errorBody is the body of a failed request.
type errorBody struct {
	Error string `json:"error"`
}

// SocketPath returns the control socket's path for the WAL directory dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketFile) }

// Listen opens the control socket of the WAL directory dir, readable and
// writable by this process's user only. A socket left by a process that
// died is replaced; one that a running process serves is an error.
func Listen(dir string) (net.Listener, error) {
	path := SocketPath(dir)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control socket %s: the path is %d bytes, longer than the %d a unix socket may have: use a shorter ingestion.wal.dir", path, len(path), maxSocketPath)
	}
	if _, err := os.Lstat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: another process serves it: is an ingestor already running on this WAL directory?", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale control socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return l, nil
}

type peerKey struct{}

// Serve answers pause and resume requests on l with c until ctx ends,
// then closes l (which removes the socket file).
func Serve(ctx context.Context, l net.Listener, c *Controller, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathPause, func(w http.ResponseWriter, r *http.Request) {
		var req request
		if !decode(w, r, &req) {
			return
		}
		by := peerOf(r.Context())
		a, err := c.Pause(r.Context(), req.Datasets, by.name, req.Reason)
		answer(w, a, err)
		log.Info("pause requested", "datasets", req.Datasets, "by", by.name, "pid", by.pid, "reason", req.Reason, "changed", a.Changed, "applied", a.Applied)
	})
	mux.HandleFunc("POST "+pathResume, func(w http.ResponseWriter, r *http.Request) {
		var req request
		if !decode(w, r, &req) {
			return
		}
		by := peerOf(r.Context())
		a, err := c.Resume(r.Context(), req.Datasets)
		answer(w, a, err)
		log.Info("resume requested", "datasets", req.Datasets, "by", by.name, "pid", by.pid, "changed", a.Changed, "applied", a.Applied)
	})
	mux.HandleFunc("GET "+pathState, func(w http.ResponseWriter, _ *http.Request) {
		answer(w, Answer{Paused: c.Record().Datasets, Changed: []string{}, Applied: true}, nil)
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, conn net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerCred(conn))
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// peer is who connected, as the kernel tells.
type peer struct {
	name string
	pid  int
}

func peerOf(ctx context.Context) peer {
	if p, ok := ctx.Value(peerKey{}).(peer); ok {
		return p
	}
	return peer{name: "unknown"}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "decode request: " + err.Error()})
		return false
	}
	return true
}

func answer(w http.ResponseWriter, a Answer, err error) {
	switch {
	case errors.Is(err, ErrUnknownDataset):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusOK, a)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
