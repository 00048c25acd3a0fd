// Package seal computes what cairn stores in place of a secret: a MAC of it under a key the
// readers of cairn's bucket do not have, so a document that records a secret's seal
// (runs, plans, the persistent graph, reports) confirms no guess of it to them.
//
// The key is an HMAC key of AWS KMS (key spec HMAC_256) that cairn's own stack creates and
// whose key policy lets only the deployer's role use it. The deployer derives its sealing
// key from it once per process (package sealkey), GenerateMac of a fixed label, and keeps it in memory only:
// whoever may call GenerateMac with that key can derive it too, and nobody else can. Local
// mode's emulator serves the same KMS calls, with key material under its --dir.
//
// Seals made before cairn keyed them are sha256 hashes of the same input (Unkeyed): they
// are still verified, and the deployer recognises values sealed that way, so a graph
// written before the change does not make every stack holding a secret look changed.
package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
)

// Key seals values. The zero Key is Unkeyed.
type Key struct {
	// id names the KMS key it was derived from ("" for Unkeyed).
	id  string
	mac []byte
}

// Unkeyed seals as cairn did before seals were keyed: a plain sha256, which anyone who
// reads a seal can use to test a guessed secret. It verifies old seals; a deployer
// without a seal key (CAIRN_SEAL_KEY_ID) seals with it too, and says so.
var Unkeyed = Key{}

// Keyed reports whether k is a key (not Unkeyed).
func (k Key) Keyed() bool { return k.mac != nil }

// ID names the KMS key k was derived from ("" for Unkeyed).
func (k Key) ID() string { return k.id }

// Marker is what a seal's hex digest is prefixed with when it is keyed:
// {{cairn:noecho@hmac:HEX}}, where an unkeyed seal is {{cairn:noecho@HEX}}.
const Marker = "hmac:"

// Sum seals the parts of a value in domain (what kind of value it is, e.g. "cairn
// noecho"): HMAC-SHA256 under k of domain and parts, each followed by a NUL byte but the
// last, prefixed with Marker; for Unkeyed, the sha256 of the same bytes, as cairn's seals
// were before.
func (k Key) Sum(domain string, parts ...string) string {
	var h hash.Hash
	if k.Keyed() {
		h = hmac.New(sha256.New, k.mac)
	} else {
		h = sha256.New()
	}
	h.Write([]byte(domain))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if k.Keyed() {
		return Marker + sum
	}
	return sum
}

// Verify reports whether digest (as Sum returns it, keyed or not) seals parts in domain:
// a keyed digest under k, an unkeyed one as Unkeyed. A keyed digest never verifies with
// Unkeyed.
func (k Key) Verify(digest, domain string, parts ...string) bool {
	want := Unkeyed
	if strings.HasPrefix(digest, Marker) {
		if !k.Keyed() {
			return false
		}
		want = k
	}
	return hmac.Equal([]byte(digest), []byte(want.Sum(domain, parts...)))
}

// IsKeyed reports whether a digest (as Sum returns it) was made with a key.
func IsKeyed(digest string) bool { return strings.HasPrefix(digest, Marker) }

// NewKey is the sealing key secret, known by id (the KMS key it was derived from): see
// package sealkey, which derives it. secret is copied.
func NewKey(id string, secret []byte) Key { return Key{id: id, mac: append([]byte(nil), secret...)} }
