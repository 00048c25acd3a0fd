package kmslocal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
)

// TestEncryptDecryptAliasesAndDeletionWindow: a symmetric key encrypts and decrypts (bound
// to the encryption context), also named by an alias; aliases are listed and deleted;
// ScheduleKeyDeletion takes a window of 7 to 30 days and CancelKeyDeletion undoes it.
func TestEncryptDecryptAliasesAndDeletionWindow(t *testing.T) {
	svc, err := kmslocal.New(kmslocal.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, svc)
	ctx := context.Background()
	key, err := c.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	id := key.KeyMetadata.KeyId
	if _, err := c.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/app"), TargetKeyId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/app"), TargetKeyId: id}); code(err) != "AlreadyExistsException" {
		t.Errorf("an alias in use: %v", err)
	}
	if _, err := c.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/aws/mine"), TargetKeyId: id}); code(err) != "NotAuthorizedException" {
		t.Errorf("a reserved alias: %v", err)
	}
	encCtx := map[string]string{"app": "shop"}
	enc, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String("alias/app"), Plaintext: []byte("secret"), EncryptionContext: encCtx})
	if err != nil || aws.ToString(enc.KeyId) != aws.ToString(key.KeyMetadata.Arn) {
		t.Fatalf("Encrypt: %v %+v", err, enc)
	}
	dec, err := c.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: enc.CiphertextBlob, EncryptionContext: encCtx})
	if err != nil || string(dec.Plaintext) != "secret" || aws.ToString(dec.KeyId) != aws.ToString(key.KeyMetadata.Arn) {
		t.Fatalf("Decrypt: %v %+v", err, dec)
	}
	if _, err := c.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: enc.CiphertextBlob}); code(err) != "InvalidCiphertextException" {
		t.Errorf("Decrypt without the encryption context: %v", err)
	}
	d, err := c.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String("alias/app")})
	if err != nil || aws.ToString(d.KeyMetadata.KeyId) != aws.ToString(id) {
		t.Errorf("DescribeKey by alias: %v", err)
	}
	list, err := c.ListAliases(ctx, &kms.ListAliasesInput{KeyId: id})
	if err != nil || len(list.Aliases) != 1 || aws.ToString(list.Aliases[0].AliasName) != "alias/app" || !strings.HasSuffix(aws.ToString(list.Aliases[0].AliasArn), ":alias/app") {
		t.Errorf("ListAliases: %v %+v", err, list)
	}
	if _, err := c.DeleteAlias(ctx, &kms.DeleteAliasInput{AliasName: aws.String("alias/app")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String("alias/app"), Plaintext: []byte("x")}); code(err) != "NotFoundException" {
		t.Errorf("Encrypt with a deleted alias: %v", err)
	}
	for _, days := range []int32{6, 31} {
		if _, err := c.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: id, PendingWindowInDays: aws.Int32(days)}); code(err) != "ValidationException" {
			t.Errorf("a window of %d days: %v", days, err)
		}
	}
	s, err := c.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: id, PendingWindowInDays: aws.Int32(7)})
	if err != nil || aws.ToInt32(s.PendingWindowInDays) != 7 || s.KeyState != types.KeyStatePendingDeletion {
		t.Fatalf("ScheduleKeyDeletion: %v %+v", err, s)
	}
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: id, Plaintext: []byte("x")}); code(err) != "KMSInvalidStateException" {
		t.Errorf("Encrypt with a key pending deletion: %v", err)
	}
	if _, err := c.CancelKeyDeletion(ctx, &kms.CancelKeyDeletionInput{KeyId: id}); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: id}); d.KeyMetadata.KeyState != types.KeyStateDisabled {
		t.Errorf("after CancelKeyDeletion: %s", d.KeyMetadata.KeyState)
	}
}
