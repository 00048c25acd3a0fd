package template

import "strings"

// CloudFormation shows a NoEcho parameter as ****, yet the resource property set from it
// shows in drift results, and an output of it in DescribeStacks: cairn must not print or
// store either in clear. Which values are secret is Secrecy's (flow.go).

// IsSecretPath reports whether a property path of a drift result (or of a change)
// touches one of the secret paths: it is one of them, within one, or holds one.
func IsSecretPath(path string, secret []string) bool {
	for _, s := range secret {
		if s == "*" || path == s || strings.HasPrefix(path, s+"/") || strings.HasPrefix(s, path+"/") || path == "" || path == "/" {
			return true
		}
	}
	return false
}
