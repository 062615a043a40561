package pause

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// ErrNotRunning is the error of a client that finds no process serving
// the control socket.
var ErrNotRunning = errors.New("no running ingestor serves the control socket")

// Client talks to the control socket of a WAL directory.
type Client struct {
	path string
	hc   *http.Client
}

// NewClient returns a client of the control socket of the WAL directory
// dir.
func NewClient(dir string) *Client {
	path := SocketPath(dir)
	return &Client{path: path, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}}}
}

// Pause pauses the named datasets, every one when names is empty.
func (c *Client) Pause(ctx context.Context, names []string, reason string) (Answer, error) {
	return c.do(ctx, http.MethodPost, pathPause, request{Datasets: names, Reason: reason})
}

// Resume resumes the named datasets, every paused one when names is empty.
func (c *Client) Resume(ctx context.Context, names []string) (Answer, error) {
	return c.do(ctx, http.MethodPost, pathResume, request{Datasets: names})
}

// State returns the pause record as the running process has it.
func (c *Client) State(ctx context.Context) (Answer, error) {
	return c.do(ctx, http.MethodGet, pathState, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body any) (Answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://ingestor"+path, rd)
	if err != nil {
		return Answer{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return Answer{}, fmt.Errorf("%w at %s: start it, or run this on its machine (in its pod) with its configuration", ErrNotRunning, c.path)
		}
		return Answer{}, fmt.Errorf("control socket %s: %w (the request may be recorded all the same: ingestor status shows what is paused, and asking again is harmless)", c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Answer{}, fmt.Errorf("control socket %s: read answer: %w", c.path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			if resp.StatusCode == http.StatusBadRequest {
				return Answer{}, &RequestError{Msg: e.Error}
			}
			return Answer{}, errors.New(e.Error)
		}
		return Answer{}, fmt.Errorf("control socket %s: %s", c.path, resp.Status)
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, fmt.Errorf("control socket %s: decode answer: %w", c.path, err)
	}
	return a, nil
}

// RequestError is a request the server refused as wrong (an unknown
// dataset): running it again will not help.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }
