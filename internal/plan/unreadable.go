package plan

import "github.com/cairn-dev/cairn/internal/awserr"

// Unreadable decides what a run does when a value its plan reads when the run begins (an
// SSM parameter of a ${ssm} lookup) could not be read, err saying why: retry — the
// trigger is delivered again — when retrying may help (throttling, a service failure, no
// answer); else the run fails with reason, "no plan: " and why, since every delivery would
// be refused the same way (access denied, a parameter outside the deployer's paths).
func Unreadable(err error) (retry bool, reason string) {
	if !awserr.Permanent(err) {
		return true, ""
	}
	return false, "no plan: " + err.Error()
}
