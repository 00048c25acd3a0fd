package crashtest

import "github.com/cairn-dev/cairn/internal/bucket"

// The bucket keys the suite reads, all from internal/bucket, the owner of the layout.

func uploadKey(deployment string) string { return bucket.DeploymentKey(deployment) }

func runPrefix(deployment string) string { return bucket.RunsOf(deployment) }

func openRunPrefix() string { return bucket.OpenRunsPrefix }

func graphKey(namespace, key string) string { return bucket.StateKey(namespace, key) }

func lockKey(namespace, key string) string { return bucket.LockKey(namespace, key) }
