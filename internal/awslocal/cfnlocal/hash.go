package cfnlocal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// hashHex gives a deterministic hex string of n characters for the given parts.
func hashHex(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	s := hex.EncodeToString(h[:])
	for len(s) < n {
		s += s
	}
	return s[:n]
}

// hashUUID gives a deterministic UUID-shaped string for the given parts.
func hashUUID(parts ...string) string {
	h := hashHex(32, parts...)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// hashUpper gives a deterministic upper-case alphanumeric suffix like CloudFormation's.
func hashUpper(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]byte, n)
	for i := range n {
		v := binary.BigEndian.Uint16(h[(2*i)%30:])
		out[i] = alpha[int(v)%len(alpha)]
	}
	return string(out)
}
