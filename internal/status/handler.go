package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/icewal/ingestor/shared/rolestatus"
)

// Path is where a role's metrics endpoint serves its status.
const Path = "/status"

// Handler serves a role's status, the envelope of shared/rolestatus
// around the body its Status method fills, as JSON. A panic in status is
// answered with a 500, not a crash.
func Handler(role string, status func() rolestatus.Details) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st := rolestatus.Status{Role: role, PID: os.Getpid(), Time: time.Now().UTC()}
		b, err := func() (b []byte, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("status of %s: panic: %v", role, r)
				}
			}()
			if status != nil {
				st.Details = status()
			}
			return json.Marshal(st)
		}()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	})
}

// fetchStatus reads a role's status from its endpoint at addr.
func fetchStatus(ctx context.Context, client *http.Client, addr string) (*rolestatus.Status, error) {
	body, err := get(ctx, client, "http://"+addr+Path)
	if err != nil {
		return nil, err
	}
	var st rolestatus.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("decode status from %s: %w", addr, err)
	}
	return &st, nil
}

// maxBody bounds what is read from an endpoint.
const maxBody = 16 << 20

func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return body, nil
}
