package run

import (
	"fmt"
	"regexp"
	"strings"
)

// Class is the kind of a failure: it decides what a person does next. A stack records
// the class of its failure when it fails (Stack.Class); NextStep turns the classes of a
// finished run into the one command to run next.
type Class string

const (
	// Fix: what was deployed is wrong (a template, a parameter, a resource's settings, the
	// config, a permission the stack needs): fix the bundle, then deploy it again.
	Fix Class = "fix"
	// Recover: a stack is stuck where only a recovery moves it (UPDATE_ROLLBACK_FAILED, or
	// a create or update that failed with disable_rollback): `cairn recover`, then deploy.
	Recover Class = "recover"
	// Review: the change needs an approved plan (a protected stack, a stale plan, more
	// deletions than the guard allows, a stack only a deletion keeping resources clears):
	// plan, review, then approve.
	Review Class = "review"
	// Wait: nothing is wrong with the bundle: AWS was busy or unavailable, a stack was
	// still in progress, or a newer run took over: wait, then look or deploy again.
	Wait Class = "wait"
)

// StatusClass is the class of a stack failure seen as the stack's CloudFormation status.
func StatusClass(status string) Class {
	switch status {
	case "UPDATE_ROLLBACK_FAILED", "CREATE_FAILED", "UPDATE_FAILED":
		return Recover
	case "ROLLBACK_FAILED", "DELETE_FAILED":
		return Review
	}
	return Fix
}

// rollbackStatuses are the statuses `cairn recover --rollback` (RollbackStack) leaves;
// UPDATE_ROLLBACK_FAILED is left by plain `cairn recover` (ContinueUpdateRollback).
var rollbackStatuses = map[string]bool{"CREATE_FAILED": true, "UPDATE_FAILED": true}

// Ending is how a run ended, as its document records it.
type Ending struct {
	Run *Run
	// Statuses are the stacks' CloudFormation statuses as last seen, by config name.
	Statuses map[string]string
	// Refusals and Errors are why the run changed nothing: the plan's refusals, the
	// bundle's errors.
	Refusals, Errors []string
	// Path is the bundle's path as the user gave it, when known; "PATH" otherwise.
	Path string
}

// Next is the command to run after a run that did not succeed, and why.
type Next struct {
	Class Class `json:"class"`
	// Why says what happened and what to do, in words, ending before the command.
	Why string `json:"why"`
	// Command is the next command; Then the one after it, when the way out takes two
	// (plan, then approve; recover, then push).
	Command string `json:"command"`
	Then    string `json:"then,omitempty"`
}

// String is "why: `command`, then `then`".
func (n Next) String() string {
	s := fmt.Sprintf("%s: `%s`", n.Why, n.Command)
	if n.Then != "" {
		s += fmt.Sprintf(", then `%s`", n.Then)
	}
	return s
}

// classOrder ranks the classes when a run failed several ways: a stuck stack is recovered
// before anything else deploys, a plan covers the fixes made before it, and waiting
// helps only when nothing else is wrong.
var classOrder = []Class{Recover, Review, Fix, Wait}

// NextStep is what to do after a run ended: false for a run that succeeded or still runs;
// else the command chosen from the class of its failure. It is the one place that
// chooses: every command that reports a run ends with it.
func NextStep(e Ending) (Next, bool) {
	r := e.Run
	if r == nil || r.Status == Succeeded || r.Status == Running {
		return Next{}, false
	}
	path := e.Path
	if path == "" {
		path = "PATH"
	}
	d := r.Deployment
	push := fmt.Sprintf("cairn push %s --deployment %s", path, d)
	planCmd := fmt.Sprintf("cairn plan %s --deployment %s", path, d)
	approve := fmt.Sprintf("cairn approve %s PLAN_ID", d)
	again := push // how this kind of run is made again
	switch {
	case r.Mode == ModePlan:
		again = planCmd
	case r.Plan != "":
		again = planCmd
	}
	redo := func(class Class, why string) Next {
		n := Next{Class: class, Why: why, Command: again}
		if again == planCmd && r.Mode != ModePlan {
			n.Then = approve
		}
		return n
	}
	switch r.Status {
	case Superseded:
		return Next{Class: Wait, Why: "a newer upload's run deploys instead: follow it", Command: "cairn follow " + d}, true
	case Abandoned:
		return redo(Wait, "the run lost its lock and stopped; CloudFormation may still be finishing its stacks: deploy again once `cairn status "+d+"` shows no run in progress"), true
	}
	if r.Policy == PolicyDenied {
		return Next{Class: Review, Why: "denied by policy (the reason names each rule, stack and resource): fix the change and push again, or plan it and have the policy owner override each denied rule for that plan (`cairn policy override " + d + " PLAN_ID RULE --reason TEXT`), then approve it",
			Command: planCmd, Then: approve}, true
	}

	// The failed stacks, each with its class, in name order.
	type failure struct {
		class Class
		stack *Stack
	}
	var failures []failure
	for _, name := range r.Names() {
		s := r.Stacks[name]
		if s.Phase != Failed {
			continue
		}
		class := s.Class
		if class == "" {
			class = Fix // a run document of a cairn before classes
		}
		failures = append(failures, failure{class, s})
	}
	for _, class := range classOrder {
		for _, f := range failures {
			if f.class != class {
				continue
			}
			s := f.stack
			switch class {
			case Recover:
				cmd := fmt.Sprintf("cairn recover %s %s", d, s.Name)
				status := e.Statuses[s.Name]
				if rollbackStatuses[status] {
					cmd += " --rollback"
				}
				return Next{Class: Recover, Why: fmt.Sprintf("stack %s is stuck (%s): recover it, then deploy again", s.Describe(), orUnknown(status)),
					Command: cmd, Then: again}, true
			case Review:
				return Next{Class: Review, Why: fmt.Sprintf("stack %s changes only through a reviewed plan: plan, review, then approve", s.Describe()),
					Command: planCmd, Then: approve}, true
			case Fix:
				if s.Stopped {
					// Its change set was not executed: the run asked for a new plan of
					// what stopped (ReplanOf), which the note names.
					return Next{Class: Review, Why: fmt.Sprintf("stack %s stopped for review: its change set at apply held more than a reviewed plan showed; review the new plan of the stopped stacks (the note above names it), then approve it", s.Describe()),
						Command: "cairn plans " + d, Then: approve}, true
				}
				if exp, user, ok := ExportInUse(s.Reason); ok {
					return redo(Fix, fmt.Sprintf("stack %s failed: stack %s still imports its export %s, which CloudFormation does not drop or change while it is in use: deploy %s without that import first (or delete it), keeping the export until then, then deploy again",
						s.Describe(), user, exp, user)), true
				}
				return redo(Fix, fmt.Sprintf("stack %s failed: fix what its reason names in the bundle, then deploy again", s.Describe())), true
			case Wait:
				return redo(Wait, fmt.Sprintf("stack %s did not finish (AWS busy or slow): wait until `cairn status %s` shows it settled, then deploy again", s.Describe(), d)), true
			}
		}
	}

	// Nothing failed on a stack: the run was refused, or its bundle did not load.
	best, bestRank := Next{}, len(classOrder)
	for _, reason := range e.Refusals {
		n := refusalStep(reason, r, path, again)
		if rank := rankOf(n.Class); rank < bestRank {
			best, bestRank = n, rank
		}
	}
	if bestRank < len(classOrder) {
		return best, true
	}
	var bare []string
	for _, err := range e.Errors {
		if m := notBootstrapped.FindStringSubmatch(err); m != nil {
			bare = append(bare, m[1])
		}
	}
	if len(bare) > 0 {
		return redo(Fix, fmt.Sprintf("the CDK bootstrap is missing in %s: bootstrap as the errors above say, then deploy again", strings.Join(bare, ", "))), true
	}
	if len(e.Errors) > 0 {
		return redo(Fix, "the bundle did not load: fix the errors above, then deploy again"), true
	}
	return redo(Fix, "the run failed before it changed a stack: fix the reason above, then deploy again"), true
}

// notBootstrapped matches cdkassets' message of an environment without the CDK bootstrap
// (cdkassets.NotBootstrappedPhrase; run does not import cdkassets).
var notBootstrapped = regexp.MustCompile(`^environment (aws://\S+) is not bootstrapped for the CDK`)

// exportInUse matches CloudFormation's refusals to drop or change an export another stack
// imports.
var exportInUse = regexp.MustCompile(`(?:Export (\S+) cannot be deleted|Cannot update export (\S+)) as it is in use by (\S+)`)

// ExportInUse reports whether reason is CloudFormation's refusal to drop or change an
// export in use, and names the export and the stack importing it.
func ExportInUse(reason string) (export, importer string, ok bool) {
	m := exportInUse.FindStringSubmatch(reason)
	if m == nil {
		return "", "", false
	}
	return m[1] + m[2], strings.TrimRight(m[3], ".,;:"), true
}

func rankOf(c Class) int {
	for i, x := range classOrder {
		if x == c {
			return i
		}
	}
	return len(classOrder)
}

func orUnknown(s string) string {
	if s == "" {
		return "status unknown"
	}
	return s
}

// quotedCommand finds the commands a message names in backquotes: "`cairn recover shop app`".
// An AWS CLI command (the tagging that adopts a stack cairn did not create) is one too.
var quotedCommand = regexp.MustCompile("`((?:cairn|aws cloudformation update-stack) [^`]+)`")

// refusalStep classes one refusal of a run: by the command it names (a refusal says its
// own way out: `cairn recover ...`, `cairn plan ...`), else by what it says (a busy stack
// waits; an apply run's refusals are a stale plan, re-planned), else a fix of the bundle.
func refusalStep(reason string, r *Run, path, again string) Next {
	var cmds []string
	for _, m := range quotedCommand.FindAllStringSubmatch(reason, 2) {
		cmds = append(cmds, strings.ReplaceAll(m[1], " PATH ", " "+path+" "))
	}
	d := r.Deployment
	if len(cmds) > 0 {
		n := Next{Class: Fix, Why: "the run was refused: " + reason, Command: cmds[0]}
		if len(cmds) > 1 {
			n.Then = cmds[1]
		}
		switch strings.Fields(cmds[0])[1] {
		case "cloudformation":
			if n.Then == "" {
				n.Then = again
			}
			n.Why = "the run was refused: a stack of the config exists, but cairn did not create it: tag it to adopt it (or rename the stack in the config), then deploy again"
			return n
		case "recover":
			n.Class = Recover
			if n.Then == "" {
				n.Then = again
			}
		case "plan", "approve", "destroy":
			n.Class = Review
			if len(strings.Fields(cmds[0])) < 3 { // "`cairn plan`", the command named only
				n.Command = fmt.Sprintf("cairn plan %s --deployment %s", path, d)
			}
			if n.Then == "" && !strings.HasPrefix(cmds[0], "cairn approve ") {
				n.Then = fmt.Sprintf("cairn approve %s PLAN_ID", d)
			}
		}
		n.Why = whyOf(n.Class)
		return n
	}
	switch {
	case strings.Contains(reason, "busy") || strings.Contains(reason, "wait until"):
		return Next{Class: Wait, Why: whyOf(Wait), Command: again}
	case r.Plan != "":
		return Next{Class: Review, Why: "the plan can no longer be applied: plan again, review, then approve",
			Command: fmt.Sprintf("cairn plan %s --deployment %s", path, d), Then: fmt.Sprintf("cairn approve %s PLAN_ID", d)}
	}
	return Next{Class: Fix, Why: whyOf(Fix), Command: again}
}

// whyOf says what a refusal of class c asks for.
func whyOf(c Class) string {
	switch c {
	case Recover:
		return "the run was refused: a stack is stuck: recover it, then deploy again"
	case Review:
		return "the run was refused: the change needs a reviewed plan: plan, review, then approve"
	case Wait:
		return "the run was refused: a stack is still in progress: wait until it settles, then deploy again"
	}
	return "the run was refused: fix what the refusal above names, then deploy again"
}
