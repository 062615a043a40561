package metrics

import (
	"testing"

	"github.com/icewal/ingestor/shared/config"
)

func TestRoleAddress(t *testing.T) {
	tests := []struct {
		name    string
		metrics config.Metrics
		role    string
		want    string
		wantErr bool
	}{
		{name: "supervisor default", role: "supervisor", want: ":9400"},
		{name: "consumer default", role: "consumer", want: ":9401"},
		{name: "uploader default", role: "uploader", want: ":9402"},
		{name: "committer default", role: "committer", want: ":9403"},
		{name: "supervisor explicit", metrics: config.Metrics{Address: "127.0.0.1:8000"}, role: "supervisor", want: "127.0.0.1:8000"},
		{name: "host kept", metrics: config.Metrics{Address: "127.0.0.1:8000"}, role: "uploader", want: "127.0.0.1:8002"},
		{name: "ipv6 host", metrics: config.Metrics{Address: "[::1]:8000"}, role: "committer", want: "[::1]:8003"},
		{name: "port zero spreads", metrics: config.Metrics{Address: "127.0.0.1:0"}, role: "consumer", want: "127.0.0.1:0"},
		{name: "port zero supervisor", metrics: config.Metrics{Address: ":0"}, role: "supervisor", want: ":0"},
		{
			name:    "override wins",
			metrics: config.Metrics{Address: ":9400", Roles: config.RoleAddresses{Uploader: ":7777"}},
			role:    "uploader", want: ":7777",
		},
		{
			name:    "override only for its role",
			metrics: config.Metrics{Address: ":9400", Roles: config.RoleAddresses{Uploader: ":7777"}},
			role:    "committer", want: ":9403",
		},
		{
			name:    "override with port zero base",
			metrics: config.Metrics{Address: ":0", Roles: config.RoleAddresses{Consumer: ":9999"}},
			role:    "consumer", want: ":9999",
		},
		{name: "unknown role", role: "janitor", wantErr: true},
		{name: "port overflow", metrics: config.Metrics{Address: ":65534"}, role: "committer", wantErr: true},
		{name: "named port", metrics: config.Metrics{Address: ":http"}, role: "consumer", wantErr: true},
		{name: "no port", metrics: config.Metrics{Address: "localhost"}, role: "consumer", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Metrics: tt.metrics}
			got, err := RoleAddress(cfg, tt.role)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("RoleAddress(%q) = %q, want an error", tt.role, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("RoleAddress(%q): %v", tt.role, err)
			}
			if got != tt.want {
				t.Errorf("RoleAddress(%q) = %q, want %q", tt.role, got, tt.want)
			}
		})
	}
}
