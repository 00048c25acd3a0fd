package atrest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awslocal/atrest"
)

func TestSealSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	k, err := atrest.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	blob := k.Seal([]byte("hunter2"))
	if strings.Contains(blob, "hunter2") || blob == k.Seal([]byte("hunter2")) {
		t.Fatalf("sealed value %q shows the secret or repeats its nonce", blob)
	}
	again, err := atrest.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := again.Unseal(blob)
	if err != nil || string(plain) != "hunter2" {
		t.Fatalf("unseal after reopening: %q %v", plain, err)
	}
	other, _ := atrest.Open("")
	if _, err := other.Unseal(blob); err == nil {
		t.Fatal("another key opened the value")
	}
	if info, err := os.Stat(filepath.Join(dir, "key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := atrest.Open(dir); err == nil || !strings.Contains(err.Error(), "not 32 bytes") {
		t.Fatalf("a damaged key: %v", err)
	}
}
