package kmslocal_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
)

func client(t *testing.T, svc *kmslocal.Service) *kms.Client {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return kms.NewFromConfig(cfg)
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestHMACKeys drives the emulated KMS with the SDK: an HMAC_256 key made by CreateKey
// gives the same MAC for the same message (HMAC-SHA256 of material nobody sees), verifies
// it and refuses a wrong one, refuses another algorithm, a key of another usage, a
// disabled key and an unknown one; the key survives a restart on the same folder, whose
// file only its user may read.
func TestHMACKeys(t *testing.T) {
	dir := t.TempDir()
	svc, err := kmslocal.New(kmslocal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	created, err := c.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: types.KeySpecHmac256, KeyUsage: types.KeyUsageTypeGenerateVerifyMac, Description: aws.String("cairn seals")})
	if err != nil {
		t.Fatal(err)
	}
	md := created.KeyMetadata
	if md.KeySpec != types.KeySpecHmac256 || md.KeyState != types.KeyStateEnabled || !strings.HasPrefix(aws.ToString(md.Arn), "arn:aws:kms:us-east-1:000000000000:key/") || md.MacAlgorithms[0] != types.MacAlgorithmSpecHmacSha256 {
		t.Fatalf("key %+v", md)
	}
	id := aws.ToString(md.KeyId)
	mac := func(c *kms.Client, key string, msg string) ([]byte, error) {
		out, err := c.GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(key), MacAlgorithm: types.MacAlgorithmSpecHmacSha256, Message: []byte(msg)})
		if err != nil {
			return nil, err
		}
		return out.Mac, nil
	}
	m1, err := mac(c, id, "cairn seal key v1")
	if err != nil || len(m1) != 32 {
		t.Fatalf("GenerateMac: %x %v", m1, err)
	}
	if m2, _ := mac(c, aws.ToString(md.Arn), "cairn seal key v1"); !hmac.Equal(m1, m2) {
		t.Error("the same message under the same key (by ARN) gave another MAC")
	}
	if m3, _ := mac(c, id, "other"); hmac.Equal(m1, m3) {
		t.Error("another message gave the same MAC")
	}
	if _, err := c.VerifyMac(ctx, &kms.VerifyMacInput{KeyId: aws.String(id), MacAlgorithm: types.MacAlgorithmSpecHmacSha256, Message: []byte("cairn seal key v1"), Mac: m1}); err != nil {
		t.Errorf("VerifyMac of the right MAC: %v", err)
	}
	wrong := sha256.Sum256([]byte("guess"))
	if _, err := c.VerifyMac(ctx, &kms.VerifyMacInput{KeyId: aws.String(id), MacAlgorithm: types.MacAlgorithmSpecHmacSha256, Message: []byte("cairn seal key v1"), Mac: wrong[:]}); code(err) != "KMSInvalidMacException" {
		t.Errorf("VerifyMac of a wrong MAC: %v", err)
	}
	if _, err := c.GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(id), MacAlgorithm: types.MacAlgorithmSpecHmacSha512, Message: []byte("x")}); code(err) != "InvalidKeyUsageException" {
		t.Errorf("another algorithm: %v", err)
	}
	sym, err := c.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mac(c, aws.ToString(sym.KeyMetadata.KeyId), "x"); code(err) != "InvalidKeyUsageException" {
		t.Errorf("an ENCRYPT_DECRYPT key: %v", err)
	}
	if _, err := c.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: types.KeySpecHmac256}); code(err) != "ValidationException" {
		t.Errorf("an HMAC key without its usage: %v", err)
	}
	if _, err := mac(c, "00000000-0000-0000-0000-000000000000", "x"); code(err) != "NotFoundException" {
		t.Errorf("an unknown key: %v", err)
	}
	if _, err := mac(c, id, ""); code(err) != "ValidationException" {
		t.Errorf("an empty message: %v", err)
	}

	st, err := os.Stat(filepath.Join(dir, "kms.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", st, err)
	}
	again, err := kmslocal.New(kmslocal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := mac(client(t, again), id, "cairn seal key v1"); err != nil || !hmac.Equal(m, m1) {
		t.Errorf("after a restart: %x %v, want %x", m, err, m1)
	}

	if _, err := c.DisableKey(ctx, &kms.DisableKeyInput{KeyId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := mac(c, id, "x"); code(err) != "DisabledException" {
		t.Errorf("a disabled key: %v", err)
	}
	if _, err := c.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	if _, err := mac(c, id, "x"); code(err) != "KMSInvalidStateException" {
		t.Errorf("a key pending deletion: %v", err)
	}
	d, err := c.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(id)})
	if err != nil || d.KeyMetadata.KeyState != types.KeyStatePendingDeletion || d.KeyMetadata.DeletionDate == nil {
		t.Errorf("DescribeKey of a key pending deletion: %+v %v", d, err)
	}
	if _, err := c.CancelKeyDeletion(ctx, &kms.CancelKeyDeletionInput{KeyId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListKeys(ctx, &kms.ListKeysInput{}); err != nil || len(l.Keys) != 2 {
		t.Errorf("ListKeys: %+v %v", l, err)
	}
}
