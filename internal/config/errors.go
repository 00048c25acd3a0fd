package config

import (
	"fmt"
	"strings"
)

// Error is one problem in a config, located so an editor can jump to it.
type Error struct {
	File      string
	Line, Col int
	// Key is the path of the offending key, such as stacks[2].parameters.VpcId.
	Key string
	Msg string
}

// Error formats the problem as FILE:LINE:COL: KEY: message, the form compilers use.
func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Key, e.Msg)
}

// Errors is every problem found in a config, in file order. Load reports all of them at
// once so a user fixes a config in one pass.
type Errors []*Error

// Error lists the errors one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
