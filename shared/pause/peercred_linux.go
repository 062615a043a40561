package pause

import (
	"net"
	"os/user"
	"strconv"
	"syscall"
)

// peerCred asks the kernel which user and process hold the other end of
// a unix socket connection (SO_PEERCRED): the client cannot claim to be
// someone else.
func peerCred(conn net.Conn) peer {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return peer{name: "unknown"}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{name: "unknown"}
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return peer{name: "unknown"}
	}
	uid := strconv.FormatUint(uint64(cred.Uid), 10)
	name := "uid " + uid
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		name = u.Username + " (uid " + uid + ")"
	}
	return peer{name: name, pid: int(cred.Pid)}
}
