package azure

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Location is a parsed Azure location.
type Location struct {
	// Scheme is abfs, abfss, wasb or wasbs.
	Scheme string
	// Container is the container (file system) name.
	Container string
	// Host is the authority's host, e.g. account.dfs.core.windows.net.
	Host string
	// Account is the storage account: the first label of Host.
	Account string
	// Path is the blob name within the container, without a leading slash.
	Path string
}

// ParseLocation parses scheme://container@account.domain/path.
func ParseLocation(location string) (Location, error) {
	u, err := url.Parse(location)
	if err != nil {
		return Location{}, fmt.Errorf("azure location %q: %w", location, err)
	}
	l := Location{Scheme: strings.ToLower(u.Scheme), Host: u.Hostname()}
	switch l.Scheme {
	case "abfs", "abfss", "wasb", "wasbs":
	default:
		return Location{}, fmt.Errorf("azure location %q: scheme %q is not abfs, abfss, wasb or wasbs", location, u.Scheme)
	}
	if u.User != nil {
		l.Container = u.User.Username()
	}
	if l.Container == "" {
		return Location{}, fmt.Errorf("azure location %q: no container (want %s://container@account.dfs.core.windows.net/path)", location, l.Scheme)
	}
	l.Account, _, _ = strings.Cut(l.Host, ".")
	if l.Account == "" {
		return Location{}, fmt.Errorf("azure location %q: no account", location)
	}
	l.Path = strings.TrimPrefix(u.Path, "/")
	if l.Path == "" || strings.HasSuffix(l.Path, "/") {
		return Location{}, fmt.Errorf("azure location %q: no object name", location)
	}
	return l, nil
}

// serviceURL returns the blob service URL of the location's account.
func serviceURL(l Location, props map[string]string) (string, error) {
	protocol := props[keyProtocol]
	switch protocol {
	case "":
		protocol = "https"
	case "http", "https":
	default:
		return "", fmt.Errorf("%s=%q: want http or https", keyProtocol, protocol)
	}
	domain := props[keyEndpoint]
	if domain == "" {
		domain = strings.TrimPrefix(l.Host, l.Account+".")
		if after, ok := strings.CutPrefix(domain, "dfs."); ok {
			domain = "blob." + after
		}
		if domain == l.Host || domain == "" {
			domain = "blob.core.windows.net"
		}
	}
	domain = strings.TrimRight(domain, "/")
	if pathStyle(domain) {
		return protocol + "://" + domain + "/" + l.Account, nil
	}
	return protocol + "://" + l.Account + "." + domain, nil
}

// pathStyle reports whether an endpoint is addressed with the account in
// the path (emulators on an IP address or localhost) rather than in the
// host name.
func pathStyle(endpoint string) bool {
	host := endpoint
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		host = h
	}
	return host == "localhost" || net.ParseIP(host) != nil
}
