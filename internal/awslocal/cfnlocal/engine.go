package cfnlocal

import (
	"fmt"
	"sort"
	"time"
)

// operation is a stack operation in flight: a schedule of resource steps.
type operation struct {
	Kind        string // CREATE, UPDATE, DELETE, ROLLBACK, UPDATE_ROLLBACK
	Phase       string // "main" or "cleanup"
	Steps       []step
	Cur         int
	Started     bool      // the current step has begun
	Due         time.Time // when the current step ends (or, if not started, begins)
	Halted      bool      // waiting for a user action (UPDATE_FAILED, UPDATE_ROLLBACK_FAILED)
	Rollback    bool      // steps are a rollback: faults do not apply unless asked
	Fail        string    // the current step fails with this reason at Due
	CRRequestID string
	CRResult    *crResult
	CROldProps  map[string]any
	// NestedID is the nested stack the current step waits for; NestedResult how it ended.
	NestedID     string
	NestedResult *nestedResult
	// MonitorUntil ends the rollback triggers' monitoring time after the main phase.
	MonitorUntil time.Time
	// Signals is the current create step's wait for its resource's signals (signal.go).
	Signals *signalWait

	Body, OldBody      string
	Original           string // the template as given, when transforms changed it; OldOriginal before
	OldOriginal        string
	Params, OldParams  map[string]string
	OldOutputs         []output
	OldImports         []string
	OldResources       map[string]*resource
	Touched            []string    // resources changed by the main phase, in order
	Cleanup            []*resource // physical resources to delete in the cleanup phase
	Failed             []string
	Skip               map[string]bool
	OnFailureDelete    bool
	ChangeSetID, Token string
	// Imported are the physical ids of the resources an IMPORT adopts, by logical id.
	Imported map[string]string

	tpl, oldTpl *template // Body and OldBody parsed, cached
}

type step struct {
	Action    string // create, modify, delete, deleteOld, revert, import
	LogicalID string
	Old       *resource // for deleteOld
}

// startOp installs op on st and runs it up to now.
func (s *Service) startOp(st *stack, op *operation, now time.Time) {
	op.Due = now
	if op.Phase == "" {
		op.Phase = "main"
	}
	st.Op = op
	s.advanceStack(st, now)
	if st.Op != nil && !st.Op.Halted {
		s.poke(st.Op.Due)
	}
}

// advance moves every stack in flight to now. Called with mu held. A nested stack that
// settles makes its parent due, so stacks are advanced until none is due.
func (s *Service) advance(now time.Time) {
	for range 1000 {
		due := false
		for _, st := range s.st.Stacks {
			if st.Op != nil && !st.Op.Halted && !st.Op.Due.After(now) {
				due = true
				s.advanceStack(st, now)
			}
		}
		if !due || !s.addressed() {
			break
		}
	}
	s.advanceChangeSets(now)
	s.advanceDrifts(now)
	s.updateChangeSetExecution()
}

// nextDue reports the earliest time something is scheduled.
func (s *Service) nextDue() (time.Time, bool) {
	var next time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	for _, st := range s.st.Stacks {
		if st.Op != nil && !st.Op.Halted {
			consider(st.Op.Due)
		}
	}
	for _, cs := range s.st.ChangeSets {
		if cs.Status == "CREATE_IN_PROGRESS" || cs.Status == "CREATE_PENDING" {
			consider(cs.ReadyAt)
		}
	}
	for _, d := range s.st.Drifts {
		if d.Status == "DETECTION_IN_PROGRESS" {
			consider(d.ReadyAt)
		}
	}
	return next, found
}

func (s *Service) advanceStack(st *stack, now time.Time) {
	if !s.addressed() {
		// Resumed from Dir before the emulator listens: a custom resource request sent now
		// would carry a ResponseURL without a host. Stacks wait for the address (Wake).
		return
	}
	for st.Op != nil && !st.Op.Halted {
		op := st.Op
		s.touch(st)
		if s.rollbackTriggered(st, now) {
			continue
		}
		if op.Due.After(now) {
			return
		}
		if op.Cur >= len(op.Steps) {
			s.finishPhase(st, op.Due)
			continue
		}
		if !op.Started {
			s.beginStep(st, op.Due)
			continue
		}
		s.endStep(st, op.Due)
	}
}

// targetEvaluator evaluates the operation's target template against the stack's state.
func (s *Service) targetEvaluator(st *stack, body string, params map[string]string) (*evaluator, *template, error) {
	tpl, err := s.parse(body)
	if err != nil {
		return nil, nil, err
	}
	e, err := s.evaluator(st, tpl, params, st.NotificationARNs)
	return e, tpl, err
}

func opVerb(action string) string {
	switch action {
	case "create":
		return "CREATE"
	case "delete", "deleteOld":
		return "DELETE"
	case "import":
		return "IMPORT"
	}
	return "UPDATE"
}

func (s *Service) beginStep(st *stack, t time.Time) {
	op := st.Op
	sp := op.Steps[op.Cur]
	op.Started, op.Fail, op.CRRequestID, op.CRResult = true, "", "", nil
	op.NestedID, op.NestedResult = "", nil
	delay := s.resourceDelay(st.Name)
	verb := opVerb(sp.Action)
	var r *resource
	var oldProps map[string]any
	reqType := ""
	switch sp.Action {
	case "create", "modify":
		e, tpl, err := s.targetEvaluator(st, op.Body, op.Params)
		d := tpl.decl(sp.LogicalID)
		var props map[string]any
		if err == nil {
			var v any
			v, err = e.eval(d.Properties)
			props, _ = v.(map[string]any)
			if props == nil {
				props = map[string]any{}
			}
			if err == nil {
				err = propertiesError(sp.LogicalID, d.Type, props)
			}
			if err == nil {
				_, err = s.resolveRefs(props, !isCustomType(d.Type)) // a reference that does not resolve fails the resource
			}
		}
		cur := st.Resources[sp.LogicalID]
		if sp.Action == "create" || cur == nil || cur.Status == "DELETE_COMPLETE" {
			r = &resource{LogicalID: sp.LogicalID, Type: d.Type, Seed: fmt.Sprintf("%s|%s|%d", st.ID, sp.LogicalID, s.nextSeq()),
				DeletionPolicy: d.DeletionPolicy, UpdateReplacePolicy: d.UpdateReplacePolicy, Props: props}
			st.Resources[sp.LogicalID] = r
			verb, reqType = "CREATE", "Create"
			if err == nil {
				err = s.nameTaken(r)
			}
			if err == nil && !isCustomType(r.Type) && !s.provides(r.Type) && r.Type != nestedType {
				r.PhysicalID = physicalID(r.Type, s.idCtx(st, r))
			}
			s.setResource(st, r, t, "CREATE_IN_PROGRESS", "")
		} else {
			r = cur
			oldProps = s.takeOver(st, op, cur)
			replace := cur.Type != d.Type
			if rt, ok := resourceTypes[cur.Type]; ok && !replace {
				for k := range union(cur.Props, props) {
					if rt.requiresReplacement(k) && !equalJSON(cur.Props[k], props[k]) {
						replace = true
					}
				}
			}
			if err == nil {
				if denied := s.policyDenies(st, cur, replace); denied != "" {
					err = invalidf("%s", denied)
				}
			}
			if replace && err == nil {
				old := *cur
				op.Cleanup = append(op.Cleanup, &old)
				r = &resource{LogicalID: sp.LogicalID, Type: d.Type, Seed: fmt.Sprintf("%s|%s|%d", st.ID, sp.LogicalID, s.nextSeq()),
					DeletionPolicy: d.DeletionPolicy, UpdateReplacePolicy: d.UpdateReplacePolicy, Props: props, Status: cur.Status}
				if !isCustomType(r.Type) && !s.provides(r.Type) && r.Type != nestedType {
					r.PhysicalID = physicalID(r.Type, s.idCtx(st, r))
				}
				st.Resources[sp.LogicalID] = r
				s.setResource(st, r, t, "UPDATE_IN_PROGRESS", "Requested update requires the creation of a new physical resource; hence creating one.")
				reqType = "Create"
			} else {
				r.DeletionPolicy, r.UpdateReplacePolicy = d.DeletionPolicy, d.UpdateReplacePolicy
				if err == nil {
					update(r, oldProps, props)
				}
				s.setResource(st, r, t, "UPDATE_IN_PROGRESS", "")
				reqType = "Update"
			}
		}
		op.Touched = append(op.Touched, sp.LogicalID)
		if err != nil {
			op.Fail = err.Error()
			delay = 0
		}
	case "import":
		r = s.beginImport(st, sp, t)
		if op.Fail != "" {
			delay = 0
		}
	case "revert":
		old := op.OldResources[sp.LogicalID]
		cur := st.Resources[sp.LogicalID]
		if old == nil {
			// created by the failed update: delete it
			if cur == nil {
				op.Started = false
				op.Cur++
				return
			}
			r = cur
			verb, reqType = "DELETE", "Delete"
			s.setResource(st, r, t, "DELETE_IN_PROGRESS", "")
			break
		}
		restored := *old
		if cur != nil && cur.PhysicalID != old.PhysicalID {
			newer := *cur
			op.Cleanup = append(op.Cleanup, &newer)
		}
		if cur != nil {
			oldProps = cur.Props
		}
		st.Resources[sp.LogicalID] = &restored
		r = &restored
		reqType = "Update"
		if cur != nil && cur.PhysicalID != old.PhysicalID {
			reqType = "" // the old physical resource still exists unchanged
		}
		s.setResource(st, r, t, "UPDATE_IN_PROGRESS", "")
	case "delete":
		r = st.Resources[sp.LogicalID]
		if r == nil || r.Status == "DELETE_COMPLETE" {
			op.Started = false
			op.Cur++
			return
		}
		if keptOnDelete(r.DeletionPolicy, op.Kind) {
			s.setResource(st, r, t, "DELETE_SKIPPED", "")
			st.RetainedResources = append(st.RetainedResources, r.LogicalID)
			op.Started = false
			op.Cur++
			if op.Kind == "UPDATE" {
				delete(st.Resources, r.LogicalID)
			}
			return
		}
		reqType = "Delete"
		s.setResource(st, r, t, "DELETE_IN_PROGRESS", "")
	case "deleteOld":
		r = sp.Old
		if r.UpdateReplacePolicy == "Retain" && op.Kind == "UPDATE" {
			s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, "DELETE_SKIPPED", "", nil)
			op.Started = false
			op.Cur++
			return
		}
		reqType = "Delete"
		s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, "DELETE_IN_PROGRESS", "", nil)
	}
	if f := s.matchFault(st.Name, r.LogicalID, verb, op.Rollback); f != nil {
		delay += f.Delay
		if f.Reason != "" && op.Fail == "" {
			op.Fail = f.Reason
		}
	}
	op.Due = t.Add(delay)
	if s.provides(r.Type) && op.Fail == "" && reqType != "" && !(reqType == "Update" && equalJSON(oldProps, r.Props) && sp.Action != "revert") {
		if reason := s.provide(st, r, reqType, oldProps, t); reason != "" {
			op.Fail, op.Due = reason, t
		}
	}
	if isCustomType(r.Type) && op.Fail == "" && reqType != "" {
		if reqType == "Update" && equalJSON(oldProps, r.Props) && sp.Action != "revert" {
			// nothing changed for the provider
		} else {
			s.sendCustomResource(st, r, reqType, oldProps, t)
		}
	}
	if r.Type == nestedType && op.Fail == "" && reqType != "" {
		s.beginNested(st, r, reqType, sp.Action == "revert", t)
	}
}

func union(a, b map[string]any) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func (t *template) decl(name string) resourceDecl {
	if t == nil {
		return resourceDecl{}
	}
	return t.Resources[name]
}

func (s *Service) endStep(st *stack, t time.Time) {
	op := st.Op
	sp := op.Steps[op.Cur]
	if s.awaitSignals(st, sp, t) {
		return
	}
	op.Started = false
	op.Cur++
	fail := op.Fail
	if op.NestedID != "" && fail == "" {
		switch {
		case op.NestedResult == nil:
			fail = fmt.Sprintf("Embedded stack %s did not finish in time", op.NestedID)
		case op.NestedResult.Failure != "":
			fail = op.NestedResult.Failure
		}
	}
	if op.CRRequestID != "" {
		switch {
		case op.CRResult == nil:
			fail = fmt.Sprintf("CloudFormation did not receive a response from your Custom Resource. Please check your custom resource provider's logs for requestId [%s].", op.CRRequestID)
		case op.CRResult.Status != "SUCCESS":
			fail = op.CRResult.Reason
			if fail == "" {
				fail = "Custom resource failed without a reason (Status " + op.CRResult.Status + ")"
			}
		}
	}
	var r *resource
	if sp.Action == "deleteOld" {
		r = sp.Old
	} else {
		r = st.Resources[sp.LogicalID]
	}
	if r == nil {
		return
	}
	if fail == "" && op.CRResult != nil && sp.Action != "deleteOld" && sp.Action != "delete" {
		if id := op.CRResult.PhysicalID; id != "" && id != r.PhysicalID {
			if r.PhysicalID != "" && sp.Action == "modify" {
				// a new physical id from an Update means replacement: the old one is
				// deleted in the cleanup phase
				old := *r
				old.Props = op.CROldProps
				op.Cleanup = append(op.Cleanup, &old)
			}
			r.PhysicalID = id
		}
		r.Attrs = op.CRResult.Data
	}
	if r.PhysicalID == "" && isCustomType(r.Type) && fail == "" {
		r.PhysicalID = st.Name + "-" + r.LogicalID + "-" + hashUpper(12, r.Seed)
	}
	verb := opVerb(sp.Action)
	if sp.Action == "revert" && op.OldResources[sp.LogicalID] == nil {
		verb = "DELETE"
	}
	if sp.Action == "modify" && r.Status == "CREATE_IN_PROGRESS" {
		verb = "CREATE"
	}
	if fail != "" {
		if sp.Action == "deleteOld" {
			s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, "DELETE_FAILED", fail, nil)
		} else {
			s.setResource(st, r, t, verb+"_FAILED", fail)
		}
		s.stepFailed(st, r, sp, fail, t)
		return
	}
	switch verb {
	case "DELETE":
		if sp.Action == "deleteOld" {
			s.addEvent(st, t, r.LogicalID, r.PhysicalID, r.Type, "DELETE_COMPLETE", "", nil)
			return
		}
		s.setResource(st, r, t, "DELETE_COMPLETE", "")
		if op.Kind != "DELETE" {
			delete(st.Resources, r.LogicalID)
		}
	default:
		s.setResource(st, r, t, verb+"_COMPLETE", "")
	}
}

// stepFailed reacts to a failed resource the way CloudFormation does for the operation.
func (s *Service) stepFailed(st *stack, r *resource, sp step, reason string, t time.Time) {
	op := st.Op
	op.Failed = append(op.Failed, r.LogicalID)
	switch {
	case op.Kind == "CREATE":
		why := fmt.Sprintf("The following resource(s) failed to create: [%s]. ", r.LogicalID)
		if st.DisableRollback {
			s.setStatus(st, t, "CREATE_FAILED", why)
			st.Op = nil
			return
		}
		s.startCreateRollback(st, why+"Rollback requested by user.", t)
	case op.Kind == "UPDATE" && op.Phase == "main":
		verb := "update"
		if _, existed := op.OldResources[r.LogicalID]; !existed {
			verb = "create"
		}
		why := fmt.Sprintf("The following resource(s) failed to %s: [%s]. ", verb, r.LogicalID)
		if st.DisableRollback {
			s.setStatus(st, t, "UPDATE_FAILED", why)
			op.Halted = true
			return
		}
		s.startUpdateRollback(st, why, t)
	case op.Kind == "UPDATE" && op.Phase == "cleanup":
		// CloudFormation ignores cleanup failures: the update stays complete.
	case op.Kind == "IMPORT":
		s.startImportRollback(st, fmt.Sprintf("The following resource(s) failed to import: [%s]. ", r.LogicalID), t)
	case op.Kind == "DELETE":
		s.setStatus(st, t, "DELETE_FAILED", fmt.Sprintf("The following resource(s) failed to delete: [%s]. ", r.LogicalID))
		st.Op = nil
	case op.Kind == "ROLLBACK":
		s.setStatus(st, t, "ROLLBACK_FAILED", fmt.Sprintf("The following resource(s) failed to delete: [%s]. ", r.LogicalID))
		st.Op = nil
	case op.Kind == "UPDATE_ROLLBACK" && op.Phase == "main":
		s.setStatus(st, t, "UPDATE_ROLLBACK_FAILED", fmt.Sprintf("The following resource(s) failed to update: [%s]. ", r.LogicalID))
		op.Cur-- // ContinueUpdateRollback retries this step
		op.Halted = true
	case op.Kind == "UPDATE_ROLLBACK":
		// cleanup failures are ignored
	}
}

// startCreateRollback deletes what a failed create made, newest first.
func (s *Service) startCreateRollback(st *stack, reason string, t time.Time) {
	old := st.Op
	s.setStatus(st, t, "ROLLBACK_IN_PROGRESS", reason)
	var steps []step
	names := make([]string, 0, len(old.Touched))
	names = append(names, old.Touched...)
	for i := len(names) - 1; i >= 0; i-- {
		steps = append(steps, step{Action: "delete", LogicalID: names[i]})
	}
	st.Op = &operation{Kind: "ROLLBACK", Phase: "main", Steps: steps, Due: t, Rollback: true, OnFailureDelete: old.OnFailureDelete, Token: old.Token}
}

// startUpdateRollback reverts what a failed update changed, newest first.
func (s *Service) startUpdateRollback(st *stack, reason string, t time.Time) {
	op := st.Op
	s.setStatus(st, t, "UPDATE_ROLLBACK_IN_PROGRESS", reason)
	var steps []step
	seen := map[string]bool{}
	for i := len(op.Touched) - 1; i >= 0; i-- {
		if !seen[op.Touched[i]] {
			seen[op.Touched[i]] = true
			steps = append(steps, step{Action: "revert", LogicalID: op.Touched[i]})
		}
	}
	op.Kind, op.Phase, op.Steps, op.Cur, op.Started, op.Due = "UPDATE_ROLLBACK", "main", steps, 0, false, t
	op.Rollback, op.Halted, op.Signals = true, false, nil
	// resources created by replacement are deleted in the rollback cleanup; the old
	// ones they replaced are restored by revert
	op.Cleanup = nil
}

// finishPhase ends the current phase of an operation whose steps are all done.
func (s *Service) finishPhase(st *stack, t time.Time) {
	op := st.Op
	if s.monitoring(st, t) {
		return
	}
	switch {
	case op.Kind == "CREATE":
		e, _, err := s.targetEvaluator(st, op.Body, op.Params)
		var outs []output
		if err == nil {
			outs, err = s.evalOutputs(e, e.tpl)
		}
		if err == nil {
			err = s.checkExportNames(st, outs)
		}
		if err != nil {
			if st.DisableRollback {
				s.setStatus(st, t, "CREATE_FAILED", err.Error())
				st.Op = nil
				return
			}
			s.startCreateRollback(st, err.Error(), t)
			return
		}
		st.Outputs, st.Resolved = outs, s.resolvedSSM(e.tpl, op.Params)
		st.Op = nil
		s.setStatus(st, t, "CREATE_COMPLETE", "")
	case op.Kind == "IMPORT":
		e, tpl, err := s.targetEvaluator(st, op.Body, op.Params)
		var outs []output
		if err == nil {
			outs, err = s.evalOutputs(e, tpl)
		}
		if err == nil {
			err = s.checkExportNames(st, outs)
		}
		if err != nil {
			s.startImportRollback(st, err.Error(), t)
			return
		}
		st.Outputs, st.Body, st.Original, st.tpl, st.Params, st.Resolved = outs, op.Body, op.Original, tpl, op.Params, s.resolvedSSM(tpl, op.Params)
		st.Description, st.Imports = tpl.Description, importsOf(st, tpl, s)
		st.Op = nil
		s.setStatus(st, t, "IMPORT_COMPLETE", "")
	case op.Kind == "UPDATE" && op.Phase == "main":
		e, tpl, err := s.targetEvaluator(st, op.Body, op.Params)
		var outs []output
		if err == nil {
			outs, err = s.evalOutputs(e, tpl)
		}
		if err == nil {
			err = s.checkExportNames(st, outs)
		}
		if err == nil {
			err = s.checkExportsInUse(st, outs)
		}
		var removed []string
		if err == nil {
			active := map[string]bool{}
			for n, d := range tpl.Resources {
				if d.Condition == "" {
					active[n] = true
				} else if ok, _ := e.condition(d.Condition); ok {
					active[n] = true
				}
			}
			oldTpl, _ := s.parse(op.OldBody)
			order := sortedKeys(st.Resources)
			if oldTpl != nil {
				if o, oerr := resourceOrder(oldTpl, propsOf(st.Resources)); oerr == nil {
					order = o
				}
			}
			for i := len(order) - 1; i >= 0; i-- {
				if r := st.Resources[order[i]]; r != nil && !active[order[i]] {
					removed = append(removed, order[i])
					if denied := s.policyDeniesAction(st, r, "Update:Delete"); denied != "" && err == nil {
						err = invalidf("%s", denied)
					}
				}
			}
		}
		if err != nil {
			s.startUpdateRollback(st, err.Error(), t)
			return
		}
		st.Outputs = outs
		st.Body, st.Original, st.tpl, st.Params, st.Resolved = op.Body, op.Original, tpl, op.Params, s.resolvedSSM(tpl, op.Params)
		st.Description = tpl.Description
		st.Imports = importsOf(st, tpl, s)
		s.setStatus(st, t, "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "")
		var steps []step
		for _, old := range op.Cleanup {
			steps = append(steps, step{Action: "deleteOld", LogicalID: old.LogicalID, Old: old})
		}
		for _, n := range removed {
			steps = append(steps, step{Action: "delete", LogicalID: n})
		}
		op.Phase, op.Steps, op.Cur, op.Started, op.Due = "cleanup", steps, 0, false, t
	case op.Kind == "UPDATE":
		st.Op = nil
		if st.ParentID != "" {
			st.Undo = op // the parent's rollback may roll this update back
		}
		s.setStatus(st, t, "UPDATE_COMPLETE", "")
	case op.Kind == "DELETE":
		st.Op = nil
		s.setStatus(st, t, "DELETE_COMPLETE", "")
	case op.Kind == "ROLLBACK":
		st.Op = nil
		s.setStatus(st, t, "ROLLBACK_COMPLETE", "")
		if op.OnFailureDelete {
			s.startDelete(st, t, op.Token)
		}
	case op.Kind == "UPDATE_ROLLBACK" && op.Phase == "main":
		st.Body, st.Original, st.Params, st.tpl = op.OldBody, op.OldOriginal, op.OldParams, nil
		st.Outputs, st.Imports = op.OldOutputs, op.OldImports
		if tpl, err := st.template(); err == nil {
			st.Description = tpl.Description
		}
		s.setStatus(st, t, "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", "")
		var steps []step
		for _, c := range op.Cleanup {
			steps = append(steps, step{Action: "deleteOld", LogicalID: c.LogicalID, Old: c})
		}
		op.Phase, op.Steps, op.Cur, op.Started, op.Due = "cleanup", steps, 0, false, t
	case op.Kind == "UPDATE_ROLLBACK":
		st.Op = nil
		s.setStatus(st, t, "UPDATE_ROLLBACK_COMPLETE", "")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// startDelete begins deleting a stack, or puts it back when its exports are in use.
func (s *Service) startDelete(st *stack, now time.Time, token string) {
	prev := st.Status
	st.LastClientToken = token
	s.setStatus(st, now, "DELETE_IN_PROGRESS", "User Initiated")
	for _, o := range st.Outputs {
		if o.ExportName == "" {
			continue
		}
		if users := s.importers(o.ExportName); len(users) > 0 {
			s.setStatus(st, now, prev, fmt.Sprintf("Export %s cannot be deleted as it is in use by %s", o.ExportName, users[0].Name))
			return
		}
	}
	var steps []step
	order := sortedKeys(st.Resources)
	if tpl, err := st.template(); err == nil {
		if o, err := resourceOrder(tpl, propsOf(st.Resources)); err == nil {
			order = o
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if _, ok := st.Resources[order[i]]; ok {
			steps = append(steps, step{Action: "delete", LogicalID: order[i]})
		}
	}
	st.Imports = nil
	s.startOp(st, &operation{Kind: "DELETE", Steps: steps, Token: token}, now)
}
