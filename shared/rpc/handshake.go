package rpc

import (
	"os"

	"github.com/hashicorp/go-plugin"
)

// PluginName is the name under which a child serves its Role.
const PluginName = "role"

// Handshake is the go-plugin handshake of the ingestor's children. The
// magic cookie is not a security measure: it tells a re-executed binary
// that it was started by the supervisor and must speak go-plugin on stdout.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "INGESTOR_ROLE_COOKIE",
	MagicCookieValue: "f2b7c1e0-icewal-ingestor-supervised-role",
}

// IsChild reports whether this process was started by the supervisor, as
// told by the handshake's magic cookie in the environment.
func IsChild() bool {
	return os.Getenv(Handshake.MagicCookieKey) == Handshake.MagicCookieValue
}
