package cfnlocal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// NoEcho parameter values are secrets. As AWS does, the emulator shows them as "****" in
// every call that describes a stack, a change set or stack events (their resource
// properties included), and in the notifications of stack events.
//
// It keeps them, in memory, in clear: updates with UsePreviousValue, rollbacks (which
// evaluate the previous template with the previous values), drift and the resources its
// services make need them. On disk (the snapshot and the journal under Dir) every
// occurrence of a secret is sealed: replaced by {{cairn:sealed:...}}, the AES-GCM
// encryption of the bytes it replaced under a key of the emulator's own
// (cloudformation.key, 0600, made on first use, as the SSM emulator keeps SecureStrings).
// So the state file can be read, copied into a bug report or searched without revealing a
// secret; whoever also holds the key file can unseal them, as the emulator does when it
// starts again on the same folder.

const mask = "****"

// noEchoValues adds to out the non-empty values in params of tpl's NoEcho parameters
// (defaults included).
func noEchoValues(out map[string]bool, tpl *template, params map[string]string) {
	if tpl == nil {
		return
	}
	for name, d := range tpl.Parameters {
		if !d.NoEcho {
			continue
		}
		v, ok := params[name]
		if !ok && d.Default != nil {
			v = *d.Default
		}
		if v != "" {
			out[v] = true
		}
	}
}

// secretsOf returns the NoEcho values of a stack: those of its template and parameters,
// and of its operation's target and previous ones.
func (s *Service) secretsOf(st *stack) map[string]bool {
	out := map[string]bool{}
	tpl, _ := st.template()
	noEchoValues(out, tpl, st.Params)
	for _, op := range []*operation{st.Op, st.Undo} {
		if op == nil {
			continue
		}
		if op.tpl == nil && op.Body != "" {
			op.tpl, _ = s.parse(op.Body)
		}
		if op.oldTpl == nil && op.OldBody != "" {
			op.oldTpl, _ = s.parse(op.OldBody)
		}
		noEchoValues(out, op.tpl, op.Params)
		noEchoValues(out, op.oldTpl, op.OldParams)
	}
	return out
}

// maskSecrets replaces every occurrence of a secret in text by "****".
func maskSecrets(text string, secrets map[string]bool) string {
	if len(secrets) == 0 || text == "" {
		return text
	}
	pairs := make([]string, 0, 4*len(secrets))
	for _, p := range patterns(secrets) {
		pairs = append(pairs, p, mask)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// patterns are the byte strings a secret appears as in JSON text: escaped once (a string
// value) and twice (a JSON document inside a string value), longest first, so the longer
// of two overlapping secrets is replaced whole.
func patterns(secrets map[string]bool) []string {
	set := map[string]bool{}
	for v := range secrets {
		once := jsonEscape(v)
		set[v], set[once], set[jsonEscape(once)] = true, true, true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		if p != "" {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return out
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// sealer seals and unseals the secrets in the state's JSON text.
type sealer struct {
	gcm     cipher.AEAD
	secrets map[string]bool
	r       *strings.Replacer // nil until a secret is known
}

var sealedRE = regexp.MustCompile(`\{\{cairn:sealed:([A-Za-z0-9_-]+)\}\}`)

// newSealer reads the folder's key, making it on first use.
func newSealer(dir string) (*sealer, error) {
	path := filepath.Join(dir, "cloudformation.key")
	key, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("write the key that seals NoEcho values: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("read the key that seals NoEcho values: %w", err)
	case len(key) != 32:
		return nil, fmt.Errorf("%s is not a 32-byte key: restore it, or delete the folder to start afresh", path)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{gcm: gcm, secrets: map[string]bool{}}, nil
}

// add makes the sealer seal the given secrets too.
func (z *sealer) add(secrets map[string]bool) {
	grown := false
	for v := range secrets {
		if !z.secrets[v] {
			z.secrets[v], grown = true, true
		}
	}
	if !grown {
		return
	}
	ps := patterns(z.secrets)
	pairs := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		nonce := make([]byte, z.gcm.NonceSize())
		_, _ = rand.Read(nonce)
		blob := z.gcm.Seal(nonce, nonce, []byte(p), nil)
		pairs = append(pairs, p, "{{cairn:sealed:"+base64.RawURLEncoding.EncodeToString(blob)+"}}")
	}
	z.r = strings.NewReplacer(pairs...)
}

// seal replaces every secret in b.
func (z *sealer) seal(b []byte) []byte {
	if z.r == nil {
		return b
	}
	return []byte(z.r.Replace(string(b)))
}

// unseal puts back what seal replaced; text that only looks sealed is left as it is.
func (z *sealer) unseal(b []byte) []byte {
	if !sealedRE.Match(b) {
		return b
	}
	return sealedRE.ReplaceAllFunc(b, func(m []byte) []byte {
		blob, err := base64.RawURLEncoding.DecodeString(string(sealedRE.FindSubmatch(m)[1]))
		if err != nil || len(blob) < z.gcm.NonceSize() {
			return m
		}
		plain, err := z.gcm.Open(nil, blob[:z.gcm.NonceSize()], blob[z.gcm.NonceSize():], nil)
		if err != nil {
			return m
		}
		return plain
	})
}
