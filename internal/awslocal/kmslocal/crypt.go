package kmslocal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"
)

// ciphertextMagic starts every ciphertext blob the emulator makes; the key id follows,
// then the AES-GCM nonce and sealed plaintext (the encryption context is its additional
// data), so Decrypt finds the key without being told, as KMS does for symmetric keys.
const ciphertextMagic = "cairn-kms1:"

// Encrypt seals plaintext (1 to 4096 bytes) under a symmetric ENCRYPT_DECRYPT key, bound to
// the encryption context; it returns the ciphertext blob and the key's ARN.
func (s *Service) Encrypt(keyID string, plaintext []byte, context map[string]string) ([]byte, string, error) {
	if len(plaintext) < 1 || len(plaintext) > 4096 {
		return nil, "", validation("1 validation error detected: Value at 'plaintext' failed to satisfy constraint: Member must have length between 1 and 4096")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, aead, err := s.encrypter(keyID, "Encrypt")
	if err != nil {
		return nil, "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", err
	}
	blob := append([]byte(ciphertextMagic+k.ID), nonce...)
	return aead.Seal(blob, nonce, plaintext, contextData(context)), k.ARN, nil
}

// Decrypt opens a blob Encrypt made; with keyID set it must name the key that made it.
func (s *Service) Decrypt(blob []byte, keyID string, context map[string]string) ([]byte, string, error) {
	invalid := &Error{Code: "InvalidCiphertextException", Message: "The ciphertext is not valid: pass the CiphertextBlob Encrypt returned, with the same EncryptionContext", Status: 400}
	rest, ok := bytes.CutPrefix(blob, []byte(ciphertextMagic))
	if !ok || len(rest) < 36 {
		return nil, "", invalid
	}
	id := string(rest[:36])
	s.mu.Lock()
	defer s.mu.Unlock()
	if keyID != "" {
		want, err := s.find(keyID)
		if err != nil {
			return nil, "", err
		}
		if want.ID != id {
			return nil, "", &Error{Code: "IncorrectKeyException", Message: "The key ID in the request does not identify a CMK that can perform this operation.", Status: 400}
		}
	}
	k, aead, err := s.encrypter(id, "Decrypt")
	if err != nil {
		return nil, "", err
	}
	rest = rest[36:]
	if len(rest) < aead.NonceSize() {
		return nil, "", invalid
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], contextData(context))
	if err != nil {
		return nil, "", invalid
	}
	return plain, k.ARN, nil
}

// encrypter returns an enabled symmetric key and its AES-GCM; called with s.mu held.
func (s *Service) encrypter(keyID, op string) (*Key, cipher.AEAD, error) {
	k, err := s.enabled(keyID)
	if err != nil {
		return nil, nil, err
	}
	if k.Usage != "ENCRYPT_DECRYPT" {
		return nil, nil, &Error{Code: "InvalidKeyUsageException", Message: fmt.Sprintf("%s key usage is %s which is not valid for %s.", k.ARN, k.Usage, op), Status: 400}
	}
	block, err := aes.NewCipher(k.Material)
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	return k, aead, err
}

// contextData is the encryption context as additional data: its JSON, keys sorted.
func contextData(c map[string]string) []byte {
	if len(c) == 0 {
		return nil
	}
	b, _ := json.Marshal(c)
	return b
}

// pendingWindow checks ScheduleKeyDeletion's PendingWindowInDays (7 to 30, default 30).
func pendingWindow(days *int) (time.Duration, int, error) {
	n := 30
	if days != nil {
		n = *days
	}
	if n < 7 || n > 30 {
		return 0, 0, validation("1 validation error detected: Value '%d' at 'pendingWindowInDays' failed to satisfy constraint: Member must have value between 7 and 30", n)
	}
	return time.Duration(n) * 24 * time.Hour, n, nil
}
