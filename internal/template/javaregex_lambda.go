//go:build cairn.lambda

package template

import "errors"

// The Lambda functions leave out regexp2 (about 260 KB of the deployer, held under 15 MB):
// a deployer's bundle is judged without the patterns Go's regexp cannot read, which
// CloudFormation judges itself. An AllowedPattern is judged by CloudFormation at
// CreateChangeSet (its ValidationError names the parameter); a resource property's
// pattern that needs lookaround by the resource's handler. `cairn validate`, built without
// this tag, judges both before anything is pushed.

// compileJava leaves every AllowedPattern unjudged (CloudFormation judges it).
func compileJava(string) (matcher, bool, error) { return nil, false, errUnjudged }

// errLookaround says a schema pattern needs what Go's regexp lacks: it is not judged.
var errLookaround = errors.New("a pattern Go's regexp cannot read: judged by CloudFormation")

// compileLookaround leaves a pattern Go's regexp cannot read unjudged.
func compileLookaround(string) (matcher, error) { return nil, errLookaround }
