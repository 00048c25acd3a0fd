package ports

import (
	"errors"
	"fmt"
	"os"

	"github.com/cairn-dev/cairn/internal/customresource"
)

// BucketEnv names the environment variable holding cairn's bucket.
const BucketEnv = "CAIRN_BUCKET"

// Config is what the ports function needs besides an S3 client.
type Config struct {
	// Bucket holds the pool documents (ports/POOL.json).
	Bucket string
	Pools  Pools
	// Handler configures the custom resource handler (allowed response hosts, clock,
	// logger, deadline margin); its Clock and Logger are also the allocator's.
	Handler customresource.Options
}

// ConfigFromEnv reads BucketEnv, PoolsEnv and customresource.HostsEnv.
func ConfigFromEnv() (Config, error) {
	bucket := os.Getenv(BucketEnv)
	if bucket == "" {
		return Config{}, fmt.Errorf("%s is not set: the ports function needs cairn's bucket name", BucketEnv)
	}
	pools, err := PoolsFromEnv()
	if err != nil {
		return Config{}, err
	}
	return Config{Bucket: bucket, Pools: pools, Handler: customresource.Options{AllowedHosts: customresource.HostsFromEnv()}}, nil
}

// NewHandler returns the handler of the ports function: its HandleSQS method serves the
// SQS queue subscribed to the custom resource topic.
func NewHandler(client S3API, cfg Config) (*customresource.Handler, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("ports: no bucket configured")
	}
	if len(cfg.Pools) == 0 {
		return nil, fmt.Errorf("ports: no pools configured (set %s)", PoolsEnv)
	}
	h := customresource.New(cfg.Handler)
	store := NewStore(client, cfg.Bucket, cfg.Handler.Clock)
	h.Register(ResourceType, NewAllocator(store, cfg.Pools, cfg.Handler.Clock, cfg.Handler.Logger))
	return h, nil
}
