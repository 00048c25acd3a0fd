package cfnlocal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Resource import (ChangeSetType IMPORT) brings resources that exist outside any stack
// into a new or existing stack, as AWS does: the change set names each resource to import
// (its type, logical id and identifier), the template describes it, with a DeletionPolicy
// (AWS refuses an import without one), and changes nothing else of the stack. Executing it
// takes the stack through IMPORT_IN_PROGRESS to IMPORT_COMPLETE; the resources are not
// made, they are adopted, with their identifier as physical id. A resource the emulator's
// services hold (a queue, a bucket, a topic) must exist; a simulated type is taken at its
// word. A failed import forgets what it adopted (IMPORT_ROLLBACK_COMPLETE) and deletes
// nothing.

// toImport is one resource of an IMPORT change set.
type toImport struct {
	LogicalID, Type string
	Identifier      map[string]string
}

// physicalID is the resource's identifier: the value of its one identifier property, or
// the values of a composite identifier joined with | in the order of their names.
func (r toImport) physicalID() string {
	var vals []string
	for _, k := range sortedKeys(r.Identifier) {
		vals = append(vals, r.Identifier[k])
	}
	return strings.Join(vals, "|")
}

// resourcesToImport reads ResourcesToImport.member.N.{ResourceType, LogicalResourceId,
// ResourceIdentifier.entry.M.key/value}.
func resourcesToImport(f form) ([]toImport, error) {
	var out []toImport
	for i, m := range f.structs("ResourcesToImport") {
		r := toImport{LogicalID: m["LogicalResourceId"], Type: m["ResourceType"], Identifier: map[string]string{}}
		for j := 1; ; j++ {
			k, ok := m[fmt.Sprintf("ResourceIdentifier.entry.%d.key", j)]
			if !ok {
				break
			}
			r.Identifier[k] = m[fmt.Sprintf("ResourceIdentifier.entry.%d.value", j)]
		}
		if r.LogicalID == "" || r.Type == "" || len(r.Identifier) == 0 {
			return nil, validation("ResourcesToImport member %d needs ResourceType, LogicalResourceId and ResourceIdentifier", i+1)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, validation("ResourcesToImport must name at least one resource for a change set of type IMPORT")
	}
	return out, nil
}

// checkImport refuses, as AWS does when the change set is made, an import whose template
// does not describe the resources with a DeletionPolicy, or changes anything else of the
// stack (st is nil for a new stack).
func (s *Service) checkImport(st *stack, body string, tpl *template, rs []toImport, params map[string]string) error {
	importing := map[string]bool{}
	var noPolicy []string
	for _, r := range rs {
		d, ok := tpl.Resources[r.LogicalID]
		if !ok {
			return validation("Resource to import %s does not exist in the template", r.LogicalID)
		}
		if d.Type != r.Type {
			return validation("Resource to import %s is of type %s in the template, not %s", r.LogicalID, d.Type, r.Type)
		}
		if st != nil {
			if cur := st.Resources[r.LogicalID]; cur != nil && cur.Status != "DELETE_COMPLETE" {
				return validation("Resource to import %s already exists in stack %s", r.LogicalID, st.Name)
			}
		}
		for _, o := range s.st.Stacks {
			if o.deleted() {
				continue
			}
			for _, cur := range o.Resources {
				if cur.Type == r.Type && cur.PhysicalID == r.physicalID() && exists(cur) {
					return validation("Resource %s of type %s with identifier %s is already managed by stack %s", r.LogicalID, r.Type, r.physicalID(), o.Name)
				}
			}
		}
		if d.DeletionPolicy == "" {
			noPolicy = append(noPolicy, r.LogicalID)
		}
		importing[r.LogicalID] = true
	}
	if len(noPolicy) > 0 {
		return validation("The following resources to import [%s] must have DeletionPolicy attribute specified in the template.", strings.Join(noPolicy, ", "))
	}
	// nothing but the imports may change: resources the stack has stay as they are
	probe := st
	if probe == nil {
		probe = &stack{Resources: map[string]*resource{}}
	}
	p, err := s.planChange(probe, body, params, nil)
	if err != nil {
		return err
	}
	var changed []string
	for _, c := range s.diff(probe, p) {
		if !importing[c.LogicalID] {
			changed = append(changed, c.LogicalID)
		}
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		return validation("As part of the import operation, you cannot modify or add [%s]", strings.Join(changed, ", "))
	}
	return nil
}

// importChanges are the changes an IMPORT change set lists.
func importChanges(rs []toImport) []change {
	var out []change
	for _, r := range rs {
		out = append(out, change{Action: "Import", LogicalID: r.LogicalID, PhysicalID: r.physicalID(), Type: r.Type})
	}
	return out
}

// importOp builds the operation that adopts the resources into st, moving it to p.
func (s *Service) importOp(st *stack, p *planned, rs []toImport, token string) *operation {
	op := &operation{Kind: "IMPORT", Body: p.body, Original: p.original, Params: p.params, Token: token,
		OldBody: st.Body, OldOriginal: st.Original, OldParams: st.Params, OldOutputs: st.Outputs, OldImports: st.Imports,
		Imported: map[string]string{}}
	for _, n := range p.active {
		for _, r := range rs {
			if r.LogicalID == n {
				op.Steps = append(op.Steps, step{Action: "import", LogicalID: n})
				op.Imported[n] = r.physicalID()
			}
		}
	}
	return op
}

// beginImport adopts one resource: it exists with its identifier as physical id, or the
// step fails.
func (s *Service) beginImport(st *stack, sp step, t time.Time) *resource {
	op := st.Op
	e, tpl, err := s.targetEvaluator(st, op.Body, op.Params)
	d := tpl.decl(sp.LogicalID)
	props := map[string]any{}
	if err == nil {
		var v any
		if v, err = e.eval(d.Properties); err == nil {
			if m, ok := v.(map[string]any); ok {
				props = m
			}
		}
	}
	r := &resource{LogicalID: sp.LogicalID, Type: d.Type, PhysicalID: op.Imported[sp.LogicalID], Props: props,
		Seed: fmt.Sprintf("%s|%s|%d", st.ID, sp.LogicalID, s.nextSeq()), DeletionPolicy: d.DeletionPolicy, UpdateReplacePolicy: d.UpdateReplacePolicy}
	st.Resources[sp.LogicalID] = r
	op.Touched = append(op.Touched, sp.LogicalID)
	s.setResource(st, r, t, "IMPORT_IN_PROGRESS", "")
	if err == nil {
		if p, ok := s.o.Providers[r.Type]; ok && p.Read != nil {
			if _, found, rerr := p.Read(context.Background(), s.provided(st, r)); rerr == nil && !found {
				err = fmt.Errorf("Resource of type '%s' with identifier '%s' was not found.", r.Type, r.PhysicalID)
			}
		}
	}
	if err != nil {
		op.Fail = err.Error()
	}
	return r
}

// startImportRollback forgets what a failed import adopted (it deletes nothing) and puts
// the stack back as it was.
func (s *Service) startImportRollback(st *stack, reason string, t time.Time) {
	op := st.Op
	s.setStatus(st, t, "IMPORT_ROLLBACK_IN_PROGRESS", reason)
	for i := len(op.Touched) - 1; i >= 0; i-- {
		if r := st.Resources[op.Touched[i]]; r != nil {
			s.setResource(st, r, t, "IMPORT_ROLLBACK_COMPLETE", "")
			delete(st.Resources, r.LogicalID)
		}
	}
	st.Op = nil
	s.setStatus(st, t, "IMPORT_ROLLBACK_COMPLETE", "")
}
