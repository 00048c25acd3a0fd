package upload

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// Approve writes the approval of plan planID of deployment (bucket.ApprovalKey), the
// object whose upload starts the plan's apply run, saying when it was approved; it
// returns the key written.
func Approve(ctx context.Context, c PutAPI, bucketName, deployment, planID string, at time.Time) (string, error) {
	key := bucket.ApprovalKey(deployment, planID)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key),
		ContentType: aws.String("text/plain"), Body: strings.NewReader("approved " + at.UTC().Format(time.RFC3339) + "\n")})
	if err != nil {
		return "", fmt.Errorf("approve: write s3://%s/%s: %w", bucketName, key, err)
	}
	return key, nil
}
