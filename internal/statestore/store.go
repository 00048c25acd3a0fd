package statestore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/clock"
)

// DefaultLease is how long a lock is held without renewal: a deployer trigger renews it,
// and a crashed run frees it for takeover once it passes.
const DefaultLease = 15 * time.Minute

// DefaultSkew is the clock difference between machines the lease tolerates: a holder stops
// trusting its lock Skew before it expires, and others take it over only Skew after, so two
// clocks that differ by less than Skew never both believe they hold it.
const DefaultSkew = 30 * time.Second

// S3API is the part of *s3.Client the store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, optFns ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
}

// Store reads and writes persistent graphs and their locks in one bucket.
type Store struct {
	S3     S3API
	Bucket string
	// Clock is the time source for leases (default clock.Real).
	Clock clock.Clock
	// Logger receives takeovers, forced unlocks, rebuilds and the versioning warning
	// (default slog.Default()).
	Logger *slog.Logger
	// Lease is how long Acquire and Renew hold the lock (default DefaultLease).
	Lease time.Duration
	// StepClaim is how long a step Resume begins keeps other invocations of the same run
	// waiting at most, should it never call EndStep (default DefaultStepClaim).
	StepClaim time.Duration
	// Skew is the tolerated clock difference between machines (default DefaultSkew;
	// negative for none).
	Skew time.Duration
}

// DefaultStepClaim bounds a step: a step observes, acts and saves in a few seconds,
// throttled calls of a few hundred stacks included; one that takes longer (or whose
// invocation died) is then resumed by another invocation of its run, which fences it.
const DefaultStepClaim = time.Minute

func (s *Store) stepClaim() time.Duration {
	if s.StepClaim <= 0 {
		return DefaultStepClaim
	}
	return s.StepClaim
}

func (s *Store) clock() clock.Clock {
	if s.Clock == nil {
		return clock.Real
	}
	return s.Clock
}

func (s *Store) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Store) lease() time.Duration {
	if s.Lease <= 0 {
		return DefaultLease
	}
	return s.Lease
}

func (s *Store) skew() time.Duration {
	if s.Skew < 0 {
		return 0
	}
	if s.Skew == 0 {
		return DefaultSkew
	}
	return s.Skew
}

// checkNames refuses names that would escape their prefix or make ambiguous keys.
func checkNames(namespace, key string) error {
	for _, v := range []struct{ what, s string }{{"namespace", namespace}, {"graph key", key}} {
		if v.s == "" || strings.ContainsAny(v.s, "/\\") || v.s == "." || v.s == ".." || strings.TrimSpace(v.s) != v.s {
			return fmt.Errorf("state: invalid %s %q: use a non-empty name without slashes or surrounding spaces", v.what, v.s)
		}
	}
	return nil
}
