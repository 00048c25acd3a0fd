package cfnlocal

import (
	"context"
	"fmt"
	"time"
)

// Provider makes the real resource behind stack resources of one type in the emulator's
// own services (a queue in its SQS, a bucket in its S3, ...), so what a stack creates can be
// used, and drift is measured against what really exists. Types without a Provider are
// simulated: identifiers and attributes are generated, nothing else exists.
//
// Providers are called with the emulator's lock held, from the stack's own step: they must
// not call back into CloudFormation.
type Provider struct {
	// Create makes the resource and returns its physical id (r.PhysicalID is the one
	// CloudFormation would choose, e.g. a generated name) and attributes for Fn::GetAtt
	// beyond the type's defaults.
	Create func(ctx context.Context, r Resource) (physicalID string, attrs map[string]any, err error)
	// Update changes the resource in place from old to r.Props.
	Update func(ctx context.Context, r Resource, old map[string]any) (attrs map[string]any, err error)
	// Delete removes the resource.
	Delete func(ctx context.Context, r Resource) error
	// Read returns the live values of the properties it can read, for drift detection;
	// exists is false when the resource is gone. Nil: drift compares the template only.
	Read func(ctx context.Context, r Resource) (props map[string]any, exists bool, err error)
	// Restore brings back, when the emulator restarts, what the emulator keeps only in
	// memory for an existing resource (event source mappings, rules, schedules).
	Restore func(ctx context.Context, r Resource) error
}

// Resource is a stack resource as a Provider sees it.
type Resource struct {
	StackName, StackID, LogicalID, Type, PhysicalID string
	Props                                           map[string]any
	Attrs                                           map[string]any
	// Name returns the value of the name property prop, or the name CloudFormation
	// generates when the template sets none (STACK-LOGICALID-SUFFIX, at most max long).
	Name func(prop string, max int) string
}

func (s *Service) provides(typ string) bool {
	_, ok := s.o.Providers[typ]
	return ok
}

// SetResourceDelay makes every resource operation of the stack named name take d instead of
// Options.ResourceDelay (0: at once), for stacks whose resources nobody watches being
// made, such as the emulator's own. It lasts until the Service stops.
func (s *Service) SetResourceDelay(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delays == nil {
		s.delays = map[string]time.Duration{}
	}
	s.delays[name] = d
}

func (s *Service) resourceDelay(stack string) time.Duration {
	if d, ok := s.delays[stack]; ok {
		return d
	}
	return s.draw(s.o.ResourceDelay, s.o.ResourceDelayMax)
}

// draw is a delay between lo and hi (Options.DelaySeed's next), or lo when hi is not
// above it.
func (s *Service) draw(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	s.drawMu.Lock()
	defer s.drawMu.Unlock()
	return lo + time.Duration(s.draws.Int64N(int64(hi-lo)+1))
}

func (s *Service) provided(st *stack, r *resource) Resource {
	c := s.idCtx(st, r)
	return Resource{StackName: st.Name, StackID: st.ID, LogicalID: r.LogicalID, Type: r.Type, PhysicalID: r.PhysicalID,
		Props: r.Props, Attrs: r.Attrs, Name: c.name}
}

// providedWith is r as its Provider sees it with props, the values of its dynamic
// references in place (a name property holding one names the resource with the value).
func (s *Service) providedWith(st *stack, r *resource, props map[string]any) Resource {
	c := s.idCtx(st, r)
	c.props = props
	return Resource{StackName: st.Name, StackID: st.ID, LogicalID: r.LogicalID, Type: r.Type, PhysicalID: r.PhysicalID,
		Props: props, Attrs: r.Attrs, Name: c.name}
}

// provide runs the Provider of r's type for a step (reqType Create, Update or Delete),
// with the values of the dynamic references in the properties; it returns the failure
// reason, "" on success. Called with mu held.
func (s *Service) provide(st *stack, r *resource, reqType string, oldProps map[string]any, t time.Time) string {
	p, ok := s.o.Providers[r.Type]
	if !ok {
		return ""
	}
	ctx := context.Background()
	props, err := s.resolveRefs(r.Props, true)
	if err == nil {
		oldProps, err = s.resolveRefs(oldProps, true)
	}
	if err != nil && reqType != "Delete" { // a resource is deleted whatever its references became
		return err.Error()
	}
	given := s.providedWith(st, r, props)
	switch reqType {
	case "Create":
		if p.Create == nil {
			return ""
		}
		c := s.idCtx(st, r)
		c.props = props
		given.PhysicalID = physicalID(r.Type, c) // the one CloudFormation would choose
		var attrs map[string]any
		var phys string
		if phys, attrs, err = p.Create(ctx, given); err == nil {
			r.PhysicalID, r.Attrs = phys, attrs
			s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, r.Status, "Resource creation Initiated", r.Props)
		}
	case "Update":
		if p.Update == nil {
			return ""
		}
		var attrs map[string]any
		if attrs, err = p.Update(ctx, given, oldProps); err == nil && attrs != nil {
			r.Attrs = attrs
		}
	case "Delete":
		err = nil
		if p.Delete != nil && r.PhysicalID != "" {
			err = p.Delete(ctx, given)
		}
	}
	if err != nil {
		return fmt.Sprintf("Resource handler returned message: %q", err.Error())
	}
	return ""
}

// restore lets the Providers bring back what lives only in memory, for every existing
// resource of every live stack, in dependency order. Called once the services are wired.
func (s *Service) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		order := sortedKeys(st.Resources)
		if tpl, err := st.template(); err == nil {
			if o, err := resourceOrder(tpl, propsOf(st.Resources)); err == nil {
				order = o
			}
		}
		for _, n := range order {
			r := st.Resources[n]
			p, ok := s.o.Providers[typeOf(r)]
			if !ok || p.Restore == nil || r.PhysicalID == "" || !exists(r) {
				continue
			}
			props, _ := s.resolveRefs(r.Props, true)
			if err := p.Restore(context.Background(), s.providedWith(st, r, props)); err != nil {
				s.log.Warn("cloudformation emulator: could not restore a stack resource", "stack", st.Name, "resource", n, "err", err)
			}
		}
	}
}

// Restore calls every Provider's Restore for the resources that exist; the emulator calls
// it once at start, after its services are wired.
func (s *Service) Restore() { s.restore() }

func typeOf(r *resource) string {
	if r == nil {
		return ""
	}
	return r.Type
}

// exists reports whether a stack resource stands for something that was made and not
// deleted since.
func exists(r *resource) bool {
	switch r.Status {
	case "CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_IN_PROGRESS", "UPDATE_FAILED", "DELETE_FAILED", "DELETE_IN_PROGRESS", "IMPORT_COMPLETE":
		return true
	}
	return false
}

// readLive returns the properties drift compares against r.Props: the template's values
// where the Provider cannot read the resource, the live ones where it can. exists is
// false when the resource was deleted out of band.
func (s *Service) readLive(st *stack, r *resource) (map[string]any, bool) {
	actual := copyProps(r.Props)
	if actual == nil {
		actual = map[string]any{}
	}
	p, ok := s.o.Providers[r.Type]
	if ok && p.Read != nil && r.PhysicalID != "" {
		live, found, err := p.Read(context.Background(), s.provided(st, r))
		if err != nil {
			s.log.Warn("cloudformation emulator: drift: could not read a resource", "stack", st.Name, "resource", r.LogicalID, "err", err)
		} else if !found {
			return nil, false
		} else {
			for k, v := range live {
				// Drift compares the properties the template sets, as CloudFormation does,
				// but not those holding a dynamic reference.
				if want, inTemplate := r.Props[k]; inTemplate && !hasDynamicRef(want) {
					actual[k] = trimTo(v, want)
				}
			}
		}
	}
	for path, v := range r.Tampered {
		setPath(actual, splitPath(path), v)
	}
	return actual, true
}

// trimTo keeps of a live value only the fields the template's value sets, recursively, so
// defaults the template leaves out are not reported as drift.
func trimTo(live, want any) any {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := map[string]any{}
		for k, v := range l {
			if wv, ok := w[k]; ok {
				out[k] = trimTo(v, wv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return live
		}
		out := make([]any, len(l))
		for i := range l {
			out[i] = trimTo(l[i], w[i])
		}
		return out
	}
	return live
}
