package plan

import (
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// Code is the sha256 of each local artifact a stack's templates name, by bundle path
// (run.Stack.Code); nil for none. A digest that cannot be made leaves it nil: TemplateHash
// still says whether the stack changed.
func Code(s *config.Stack) map[string]string {
	if s.Tree == nil {
		return nil
	}
	c, err := s.Tree.Code()
	if err != nil || len(c) == 0 {
		return nil
	}
	return c
}

// templateChanged is why a stack whose template input changed is updated: the code that
// changed, by path and sha256, when the graph recorded the code applied, else "template
// changed". It records the changes in rs for the plan.
func templateChanged(p *state.Stack, rs *run.Stack) string {
	if p.Code == nil && rs.Code == nil {
		return "template changed"
	}
	rs.CodeChanges = run.CodeChanges(p.Code, rs.Code)
	if len(rs.CodeChanges) == 0 {
		return "template changed"
	}
	var why []string
	for _, c := range rs.CodeChanges {
		why = append(why, c.String())
	}
	return strings.Join(why, ", ")
}
