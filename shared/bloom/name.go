package bloom

import (
	"fmt"
	"strings"
)

// SidecarName returns the object name of a column's sidecar beside the data
// file <id>.parquet: <id>.bloom.<column>. Bytes of the column name other
// than letters, digits, '_', '-' and '.' are written ~XX in upper-case hex,
// so that two column names never share a sidecar and no name holds a slash.
func SidecarName(id, column string) string {
	var b strings.Builder
	b.WriteString(id + ".bloom.")
	for i := 0; i < len(column); i++ {
		c := column[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "~%02X", c)
		}
	}
	return b.String()
}

// sidecarInfix separates a data file's id from the column in a sidecar
// name; no data file id holds it (a UUID, or compacted-<UUID>).
const sidecarInfix = ".bloom."

// SidecarDataFile returns the location of the data file <id>.parquet that
// the sidecar at location (<dir>/<id>.bloom.<column>, SidecarName)
// describes, and false when location is not a sidecar's.
func SidecarDataFile(location string) (string, bool) {
	dir := strings.LastIndex(location, "/") + 1
	i := strings.Index(location[dir:], sidecarInfix)
	if i <= 0 || dir+i+len(sidecarInfix) == len(location) {
		return "", false
	}
	return location[:dir+i] + ".parquet", true
}
