package plan

import (
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/template"
)

// Early says whether a deploy run may make s's change set while the stacks it depends on
// are being updated (run.Stack.Early). The run checks its parameters again once they
// finished, so it is allowed where nothing else of the change set can change with them:
// the stack's templates are the bundle's (a template_url's is not read) and read nothing
// beyond their parameters that another stack's update may change (template.Tree.Outside),
// and no tag reads an output (tags are resolved as the change set is made, and not
// compared again).
func Early(s *config.Stack) bool {
	for _, l := range s.Lookups {
		if l.Tag != "" && l.Kind == config.KindOutput {
			return false
		}
	}
	switch {
	case s.Tree != nil:
		return s.Tree.Outside() == ""
	case s.Template != nil:
		return (&template.Tree{Template: s.Template}).Outside() == ""
	}
	return false
}
