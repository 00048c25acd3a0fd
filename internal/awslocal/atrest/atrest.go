// Package atrest keeps the emulated services' secrets encrypted at rest (SSM SecureString
// values, Secrets Manager secret values), as KMS's AWS-managed keys do for AWS: in memory
// and in the state files under the emulator's folder, so that no secret is stored in clear.
// Each service has a key of its own (AES-256-GCM), kept beside its state.
package atrest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Key seals and opens values.
type Key struct{ gcm cipher.AEAD }

// Open returns the key kept in dir/key, making it on first use; dir "" makes a key that
// lives in memory only.
func Open(dir string) (*Key, error) {
	raw := make([]byte, 32)
	if dir == "" {
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		return newKey(raw)
	}
	path := filepath.Join(dir, "key")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create state folder: %w", err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return nil, fmt.Errorf("write key: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("read key: %w", err)
	case len(b) != 32:
		return nil, fmt.Errorf("key %s is not 32 bytes: delete the folder to start afresh", path)
	default:
		raw = b
	}
	return newKey(raw)
}

func newKey(raw []byte) (*Key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Key{gcm: gcm}, nil
}

// Seal encrypts plain and returns it base64-encoded, a fresh nonce each time.
func (k *Key) Seal(plain []byte) string {
	nonce := make([]byte, k.gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(k.gcm.Seal(nonce, nonce, plain, nil))
}

// Unseal decrypts what Seal returned.
func (k *Key) Unseal(blob string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(blob)
	if err != nil || len(b) < k.gcm.NonceSize() {
		return nil, errors.New("a sealed value is not what this key sealed")
	}
	plain, err := k.gcm.Open(nil, b[:k.gcm.NonceSize()], b[k.gcm.NonceSize():], nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt a sealed value: %w (was the key file replaced?)", err)
	}
	return plain, nil
}
