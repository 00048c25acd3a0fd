package deploy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestDeploymentNameOutsideTheSafeCharactersIsRefused uploads a bundle, and an approval,
// under a deployment name holding a right-to-left override (U+202E), as an uploader to the
// bucket can: the deployer accepts the names the CLI accepts only, so it refuses both,
// says why in its log, and records or deploys nothing under runs/, plans/, state/ or
// locks/.
func TestDeploymentNameOutsideTheSafeCharactersIsRefused(t *testing.T) {
	w := newReviewWorld(t)
	const evil = "\u202eevil"
	w.push(evil, copyBundle(t, chain))
	if _, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
		Key: aws.String("approvals/shop/\u202e20261130-080000000-1a2b3c4d"), Body: strings.NewReader("ok")}); err != nil {
		t.Fatal(err)
	}
	w.waitLog(`use letters, digits, '.', '_' and '-' only, starting with a letter or digit`)
	w.waitLog(`a plan id holds letters, digits`)
	time.Sleep(100 * time.Millisecond) // virtual minutes: anything the uploads started would show
	if keys := w.written(); len(keys) > 0 {
		t.Errorf("the refused uploads wrote %v", keys)
	}
	if stacks := w.stacks(); len(stacks) != 0 {
		t.Errorf("the refused upload created %d stack(s)", len(stacks))
	}
}
