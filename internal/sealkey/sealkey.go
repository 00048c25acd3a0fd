// Package sealkey derives cairn's sealing key (seal.Key) from the KMS HMAC key cairn's
// stack makes: one GenerateMac call of a fixed message, whose MAC is the key. Only the
// deployer's role may make that call; the key lives in memory only. Kept apart from seal so
// the packages that seal and verify link no KMS client.
package sealkey

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/cairn-dev/cairn/internal/seal"
)

// derivation is the message whose MAC under the KMS key is the sealing key. Changing it
// changes every seal.
const derivation = "cairn seal key v1"

// MACAPI is the KMS call the sealing key is derived with.
type MACAPI interface {
	GenerateMac(ctx context.Context, in *kms.GenerateMacInput, optFns ...func(*kms.Options)) (*kms.GenerateMacOutput, error)
}

// FromKMS derives the sealing key from the KMS HMAC key keyID (an id, ARN or alias): one
// GenerateMac call. The key is held in memory only; the error says what to fix.
func FromKMS(ctx context.Context, api MACAPI, keyID string) (seal.Key, error) {
	if keyID == "" {
		return seal.Unkeyed, errors.New("no seal key: set CAIRN_SEAL_KEY_ID to the KMS HMAC key cairn's stack makes")
	}
	out, err := api.GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(keyID), MacAlgorithm: kmstypes.MacAlgorithmSpecHmacSha256, Message: []byte(derivation)})
	if err != nil {
		return seal.Unkeyed, fmt.Errorf("derive the seal key from KMS key %s (kms:GenerateMac, which only the deployer's role may call): %w", keyID, err)
	}
	if len(out.Mac) < sha256.Size {
		return seal.Unkeyed, fmt.Errorf("KMS key %s gave a %d-byte MAC: it must be an HMAC_256 key (key usage GENERATE_VERIFY_MAC)", keyID, len(out.Mac))
	}
	return seal.NewKey(aws.ToString(out.KeyId), out.Mac), nil
}
