package template

import (
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// RuntimeProblem says what AWS's Lambda runtime lifecycle makes of a function using
// runtime on a day (YYYY-MM-DD, see Today): an error once AWS blocks creating functions
// with it (the stack's create or update fails), a warning once it is deprecated (no more
// security patches) before that. ok is false for a supported or unknown runtime. The
// dates are the lifecycle table cfn-lint ships (resourcespec.LookupRuntime). It serves every
// resource that sets a runtime: AWS::Lambda::Function, and the functions and Globals of
// the Serverless transform.
func RuntimeProblem(runtime, day string) (msg string, warning, ok bool) {
	life, known := resourcespec.LookupRuntime(runtime)
	if !known {
		return "", false, false
	}
	next := ""
	if life.Successor != "" {
		next = ": move to " + life.Successor
	}
	switch {
	case life.UpdateBlocked != "" && life.UpdateBlocked <= day:
		return fmt.Sprintf("Lambda runtime %s is deprecated: AWS blocked creating functions with it on %s and updating them on %s%s", runtime, life.CreateBlocked, life.UpdateBlocked, next), false, true
	case life.CreateBlocked != "" && life.CreateBlocked <= day:
		return fmt.Sprintf("Lambda runtime %s is deprecated: AWS blocked creating functions with it on %s, and blocks updating them on %s%s", runtime, life.CreateBlocked, life.UpdateBlocked, next), false, true
	case life.Deprecated != "" && life.Deprecated <= day:
		block := ""
		if life.CreateBlocked != "" {
			block = fmt.Sprintf(" (AWS blocks creating functions with it on %s)", life.CreateBlocked)
		}
		return fmt.Sprintf("Lambda runtime %s is deprecated since %s%s%s", runtime, life.Deprecated, block, next), true, true
	}
	return "", false, false
}

// Today is the current date in UTC, the day Check judges runtimes on, as RuntimeProblem
// takes it. Code that loads templates for a user (the CLI, the deployer) passes the day on
// (config.LoadOptions.Today) so one load judges every template on the same day.
func Today() string {
	return time.Now().UTC().Format(time.DateOnly)
}
