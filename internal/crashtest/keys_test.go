package crashtest

import (
	"path"

	"github.com/cairn-dev/cairn/internal/deploy"
	"github.com/cairn-dev/cairn/internal/state"
)

// The bucket keys the suite reads, in one place, each taken from the package that owns it.

// uploadKey is where a user uploads a deployment's bundle (README: "What happens on a push").
func uploadKey(deployment string) string { return "deployments/" + deployment + ".zip" }

// runPrefix holds a deployment's run documents and reports.
func runPrefix(deployment string) string { return path.Dir(deploy.RunKey(deployment, "run")) + "/" }

// openRunPrefix holds the index of open runs (README: "State in the bucket").
func openRunPrefix() string { return runPrefix("active") }

func graphKey(namespace, key string) string { return state.StateKey(namespace, key) }

func lockKey(namespace, key string) string { return state.LockKey(namespace, key) }

// planPrefix holds a deployment's plan documents (README: "State in the bucket").
func planPrefix(deployment string) string { return "plans/" + deployment + "/" }
