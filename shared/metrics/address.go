package metrics

import (
	"fmt"
	"net"
	"strconv"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
)

// Supervisor is the name RoleAddress gives the supervisor process.
const Supervisor = "supervisor"

// roleOffsets are the ports the roles take after the supervisor's, in
// record-path order.
var roleOffsets = map[string]int{
	role.Consumer:   1,
	role.Uploader:   2,
	role.Committer:  3,
	role.Maintainer: 4,
}

// RoleAddress returns the metrics listen address of a process: the
// supervisor's is metrics.address (default :9400); the consumer, uploader,
// committer and maintainer take the next four ports on the same host unless
// metrics.roles.<role> names an address. When the supervisor's port is 0,
// every role gets port 0 as well, so that each picks a free port.
func RoleAddress(cfg *config.Config, roleName string) (string, error) {
	base := cfg.Metrics.Address
	if base == "" {
		base = config.DefaultMetricsAddress
	}
	if roleName == Supervisor {
		return base, nil
	}
	offset, ok := roleOffsets[roleName]
	if !ok {
		return "", fmt.Errorf("metrics address: unknown role %q", roleName)
	}
	if own := roleOverride(cfg.Metrics.Roles, roleName); own != "" {
		return own, nil
	}
	host, portText, err := net.SplitHostPort(base)
	if err != nil {
		return "", fmt.Errorf("metrics.address %q: %w", base, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", fmt.Errorf("metrics.address %q: want a numeric port", base)
	}
	if port == 0 {
		return net.JoinHostPort(host, "0"), nil
	}
	if port+offset > 65535 {
		return "", fmt.Errorf("metrics.address %q: no port left for the %s; set metrics.roles.%s", base, roleName, roleName)
	}
	return net.JoinHostPort(host, strconv.Itoa(port+offset)), nil
}

func roleOverride(r config.RoleAddresses, roleName string) string {
	switch roleName {
	case role.Consumer:
		return r.Consumer
	case role.Uploader:
		return r.Uploader
	case role.Committer:
		return r.Committer
	case role.Maintainer:
		return r.Maintainer
	}
	return ""
}
