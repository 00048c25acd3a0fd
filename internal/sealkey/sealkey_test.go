package sealkey

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cairn-dev/cairn/internal/seal"
)

// fakeKMS answers GenerateMac as an HMAC_256 key of material does.
type fakeKMS struct {
	material []byte
	err      error
	calls    int
}

func (f *fakeKMS) GenerateMac(_ context.Context, in *kms.GenerateMacInput, _ ...func(*kms.Options)) (*kms.GenerateMacOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	m := hmac.New(sha256.New, f.material)
	m.Write(in.Message)
	return &kms.GenerateMacOutput{KeyId: aws.String("arn:aws:kms:us-east-1:000000000000:key/" + aws.ToString(in.KeyId)), Mac: m.Sum(nil)}, nil
}

func TestSealsAreKeyed(t *testing.T) {
	ctx := context.Background()
	k1, err := FromKMS(ctx, &fakeKMS{material: []byte("one")}, "k")
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := FromKMS(ctx, &fakeKMS{material: []byte("two")}, "k")
	s1 := k1.Sum("cairn noecho", "app", "Password", "hunter2")
	if !strings.HasPrefix(s1, seal.Marker) || len(s1) != len(seal.Marker)+64 || !seal.IsKeyed(s1) || k1.ID() != "arn:aws:kms:us-east-1:000000000000:key/k" {
		t.Fatalf("keyed seal %q of key %q", s1, k1.ID())
	}
	// Nobody without the key can confirm a guess: the unkeyed hash of the right guess,
	// and the seal under another key, differ.
	if s1 == k2.Sum("cairn noecho", "app", "Password", "hunter2") || strings.Contains(s1, seal.Unkeyed.Sum("cairn noecho", "app", "Password", "hunter2")) {
		t.Error("a keyed seal is computable without its key")
	}
	if !k1.Verify(s1, "cairn noecho", "app", "Password", "hunter2") || k1.Verify(s1, "cairn noecho", "app", "Password", "hunter3") ||
		k2.Verify(s1, "cairn noecho", "app", "Password", "hunter2") || seal.Unkeyed.Verify(s1, "cairn noecho", "app", "Password", "hunter2") {
		t.Error("Verify of a keyed seal")
	}
	// Parts are separated: moving a boundary changes the seal.
	if k1.Sum("d", "ab", "c") == k1.Sum("d", "a", "bc") {
		t.Error("parts are not separated")
	}
}

// TestUnkeyedIsTheSealOfOldCairn: seals made before keys are sha256 of the domain and the
// parts joined by NUL bytes, and are still verified, by any key.
func TestUnkeyedIsTheSealOfOldCairn(t *testing.T) {
	sum := sha256.Sum256([]byte("cairn bundle\x00app\x00s3cret"))
	old := hex.EncodeToString(sum[:])
	if got := seal.Unkeyed.Sum("cairn bundle", "app", "s3cret"); got != old || seal.IsKeyed(got) {
		t.Fatalf("Unkeyed.Sum = %q, want %q", got, old)
	}
	k, _ := FromKMS(context.Background(), &fakeKMS{material: []byte("one")}, "k")
	if !k.Verify(old, "cairn bundle", "app", "s3cret") || k.Verify(old, "cairn bundle", "app", "other") {
		t.Error("a keyed deployer does not verify old seals")
	}
}

func TestFromKMSErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := FromKMS(ctx, &fakeKMS{}, ""); err == nil || !strings.Contains(err.Error(), "set CAIRN_SEAL_KEY_ID") {
		t.Errorf("no key id: %v", err)
	}
	_, err := FromKMS(ctx, &fakeKMS{err: errors.New("AccessDeniedException: not allowed")}, "k")
	if err == nil || !strings.Contains(err.Error(), "derive the seal key from KMS key k (kms:GenerateMac, which only the deployer's role may call): AccessDeniedException") {
		t.Errorf("refused: %v", err)
	}
}
