package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/target"
)

// PlanMarkdown writes a plan as a pull-request comment: the hidden marker CI finds its own
// comment by, what it deletes and replaces first (what a reviewer must not miss), the
// capabilities it grants, a diagram of the stacks it touches and their dependencies, then
// every stack in deploy order with its resource changes, property-level details folded
// away. It is the whole plan, however long; PlanComment fits it into a comment.
func PlanMarkdown(w io.Writer, p *plan.Document) error {
	head, stacks := planMarkdown(p)
	_, err := io.WriteString(w, head+strings.Join(stacks, ""))
	return err
}

// planMarkdown renders a plan as its head (everything up to the stacks' sections) and one
// section per changing stack, in deploy order.
func planMarkdown(p *plan.Document) (head string, stacks []string) {
	var b strings.Builder
	title := "plan"
	if p.Destroy {
		title = "destroy plan"
	}
	b.WriteString(CommentMarker(p.Deployment) + "\n")
	fmt.Fprintf(&b, "# cairn %s %s of deployment %s: %s\n\n", title, Text(p.ID), Text(p.Deployment), Text(string(p.Status)))
	fmt.Fprintf(&b, "- Bundle: %s\n", Text(bundleLine(p.Bundle)))
	if src := sourceLine(p.Bundle.Source); src != "" {
		fmt.Fprintf(&b, "- Source: %s\n", src)
	}
	fmt.Fprintf(&b, "- Graph: %s/%s at generation %d\n", Text(p.Namespace), Text(p.GraphKey), p.Generation)
	fmt.Fprintf(&b, "- Planned: %s\n", stamp(p.CreatedAt))
	if p.Bundle.Bucket != "" {
		fmt.Fprintf(&b, "- Page: %s, with its graph and change sets (%s prints a link to it)\n",
			Code(bucket.URI(p.Bundle.Bucket, bucket.PlanPageKey(p.Deployment, p.ID))), Code("cairn open "+p.Deployment+" "+p.ID))
	}
	if p.Reason != "" {
		fmt.Fprintf(&b, "- Reason: %s\n", Text(p.Reason))
	}
	if next := nextStep(p); next != "" {
		fmt.Fprintf(&b, "- Next: %s\n", next)
	}
	b.WriteString("\n")
	for _, wn := range p.Warnings {
		fmt.Fprintf(&b, "> **Warning:** %s\n\n", Text(wn))
	}
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "## %s\n\n", title)
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
		b.WriteString("\n")
	}
	var errs, refusals []string
	for _, e := range p.Errors {
		errs = append(errs, Code(e))
	}
	for _, r := range p.Refusals {
		refusals = append(refusals, Text(r))
	}
	section("Errors (nothing was planned)", errs)
	section("Refused", refusals)
	b.WriteString(PolicyMarkdown(p.Policy, p.Deployment, p.ID))
	var guards []string
	for _, c := range p.GuardChanges() {
		guards = append(guards, Text(c.String()))
	}
	section("Guards changed (a relaxed one applies only through this plan's approval)", guards)
	section("Deletions and replacements", dangers(p, Text))
	order := Order(p)
	// What a reviewer looks at: the stacks that change, and those whose inputs are known
	// only after apply (they may change once what they read is applied).
	var changing []plan.Stack
	for _, s := range order {
		if s.Action != plan.None || s.InputsMayChange {
			changing = append(changing, s)
		}
	}
	var granted []string
	for _, s := range changing {
		if c := capabilities(p, s.Name); c != "" && s.Action != plan.Delete {
			granted = append(granted, fmt.Sprintf("%s (%s): %s", Text(s.Name), Text(stackName(p, s)), Text(c)))
		}
	}
	section("Capabilities granted", granted)
	b.WriteString(changedOutside(p, order))
	if !p.Approvable() && len(p.Errors) == 0 && len(p.Refusals) == 0 {
		b.WriteString("No changes: every stack is up to date, and there is nothing to approve.\n")
	}
	if len(changing) > 0 {
		b.WriteString(PlanDiagram(p))
		b.WriteString("## Stacks, in deploy order\n\n| Stack | CloudFormation stack | Action | Resource changes | Replacements | Notes |\n|---|---|---|---|---|---|\n")
		for _, s := range changing {
			changes := fmt.Sprint(len(s.Changes))
			switch {
			case s.Action == plan.Delete:
				changes = "-"
			case s.CreatedAtApply && len(s.Resources) > 0:
				changes = fmt.Sprintf("%d (template)", len(s.Resources))
			case s.CreatedAtApply:
				changes = "-"
			}
			action := string(s.Action)
			if s.Action == plan.None {
				action, changes = "known after apply", "-"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", Cell(s.Name), Cell(stackName(p, s)), Cell(action), changes, s.Replacements(), Cell(strings.Join(s.Marks(), ", ")))
		}
		b.WriteString("\n")
		if n := len(p.Stacks) - len(changing); n > 0 {
			var names []string
			for _, s := range order {
				if s.Action == plan.None && !s.InputsMayChange {
					names = append(names, Text(s.Name))
				}
			}
			fmt.Fprintf(&b, "Unchanged: %s.\n\n", strings.Join(names, ", "))
		}
	}
	for _, s := range changing {
		stacks = append(stacks, stackSection(p, s))
	}
	return b.String(), stacks
}

// stackSection is one changing stack's part of the Markdown plan.
func stackSection(p *plan.Document, s plan.Stack) string {
	var b strings.Builder
	action := string(s.Action)
	if s.Action == plan.None {
		action = "unchanged now, known after apply"
	}
	fmt.Fprintf(&b, "### %s (%s): %s\n\n", Text(s.Name), Text(stackName(p, s)), Text(action))
	if s.ChangeSetName != "" {
		fmt.Fprintf(&b, "Change set %s", Code(s.ChangeSetName))
		if s.Status != "" {
			fmt.Fprintf(&b, " against the stack as it was at %s (%s)", stamp(s.LastUpdated), Text(s.Status))
		}
		b.WriteString(".\n")
	}
	for _, m := range s.Marks() {
		switch m {
		case "known after apply":
			b.WriteString(knownAfterApply(s))
		case "created at apply":
			b.WriteString("> **Created at apply:** a stack it depends on is created by this plan, so its change set is made during the apply, from the outputs the new stack has.\n")
		}
	}
	if c := capabilities(p, s.Name); c != "" {
		fmt.Fprintf(&b, "Capabilities: %s.\n", Text(c))
	}
	if r := p.ServiceRole(s.Name); r != "" && s.Action != plan.Delete {
		fmt.Fprintf(&b, "Service role: %s.\n", Code(r))
	}
	if s.Action == plan.Delete {
		if len(s.Resources) == 0 {
			b.WriteString("The stack and every resource in it are deleted.\n\n")
			return b.String()
		}
		fmt.Fprintf(&b, "The stack is deleted, and with it its %d resource(s):\n\n| Resource | Type | Action |\n|---|---|---|\n", len(s.Resources))
		for _, r := range s.Resources {
			fmt.Fprintf(&b, "| %s | %s | Remove |\n", Cell(r.LogicalID), Cell(r.Type))
		}
		b.WriteString("\n")
		return b.String()
	}
	if len(s.ParameterChanges) > 0 {
		b.WriteString("\n| Parameter | Old | New |\n|---|---|---|\n")
		for _, c := range s.ParameterChanges {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", Cell(c.Name), CodeCell(cmp.Or(c.Old, "(none)")), CodeCell(cmp.Or(c.New, "(removed)")))
		}
	}
	if len(s.Changes) == 0 && len(s.Resources) == 0 && s.ChangeSetName != "" {
		fmt.Fprintf(&b, "\nNo resource changes: the stack changes because %s; its change set updates %s only.\n", Text(changeReason(p, s)), map[bool]string{true: "its parameters and settings", false: "its settings"}[len(s.ParameterChanges) > 0])
	}
	if len(s.Changes) == 0 && len(s.Resources) > 0 {
		b.WriteString("\nIts template declares these resources, which its creation adds:\n\n| Resource | Type | Action |\n|---|---|---|\n")
		for _, r := range s.Resources {
			fmt.Fprintf(&b, "| %s | %s | Add |\n", Cell(r.LogicalID), Cell(r.Type))
		}
		b.WriteString("\n")
		return b.String()
	}
	if len(s.Changes) == 0 {
		b.WriteString("\n")
		return b.String()
	}
	b.WriteString("\n| Resource | Type | Action | Replacement |\n|---|---|---|---|\n")
	var details []string
	for _, c := range s.Changes {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", Cell(c.LogicalID), Cell(c.Type), Cell(c.Action), Cell(cmp.Or(c.Replacement, "-")))
		for _, d := range c.Details {
			details = append(details, fmt.Sprintf("- %s: %s", Text(c.LogicalID), Text(d)))
		}
	}
	b.WriteString("\n")
	if len(details) > 0 {
		fmt.Fprintf(&b, "<details><summary>Details of %d change(s)</summary>\n\n%s\n\n</details>\n\n", len(details), strings.Join(details, "\n"))
	}
	return b.String()
}

// knownAfterApply explains a stack whose inputs the plan knows only after apply: which
// parameters, the resources of its template they feed, and what the apply does.
func knownAfterApply(s plan.Stack) string {
	var b strings.Builder
	b.WriteString("> **Known after apply:** ")
	if len(s.KnownAfterApply) > 0 {
		var params []string
		for _, p := range s.KnownAfterApply {
			param := Code(p)
			if feeds := s.Feeds[p]; len(feeds) > 0 {
				var res []string
				for _, r := range feeds {
					res = append(res, Text(r))
				}
				param += " (feeds " + strings.Join(res, ", ") + ")"
			}
			params = append(params, param)
		}
		fmt.Fprintf(&b, "its parameters %s read outputs of stacks this plan changes. ", strings.Join(params, ", "))
	} else {
		b.WriteString("its parameters read outputs of stacks this plan changes. ")
	}
	b.WriteString("Once those are applied, the apply runs the change set shown if they came out as planned; otherwise it makes a new change set and runs it only if every change in it is explained by them (their references, the replacement of what they feed): anything more stops the stack for a new review.\n")
	return b.String()
}

// changeReason is why a stack changes, as the plan decided it (its decision's reason).
func changeReason(p *plan.Document, s plan.Stack) string {
	for _, d := range p.Decisions {
		if d.Stack == s.Name && d.Reason != "" {
			return d.Reason
		}
	}
	if len(s.ParameterChanges) > 0 {
		return "its parameters change"
	}
	return cmp.Or(s.Reason, "its inputs changed")
}

// nextStep is what to do about a plan in its status, for the comment: approve it, or why
// not and what to do instead.
func nextStep(p *plan.Document) string {
	// Not "re-run the plan job": GitHub re-runs a job on the commit it first ran on, so a
	// re-run plans the old merge again (after another merge, a plan that reverts it).
	replan := "update the pull request's branch (GitHub's Update branch, or a push), whose new plan job plans it against main as it is now (" +
		Code("cairn plan PATH --deployment "+p.Deployment) + "), and review the new plan (re-running the old job would plan the old commit again)"
	switch p.Status {
	case plan.Planned:
		if !p.Approvable() {
			return ""
		}
		if p.Policy != nil && p.Policy.Denied {
			return "denied by policy (see Policy below): fix the change and " + replan + "; or have the policy owner override each denied rule for this plan, then approve it"
		}
		return fmt.Sprintf("on merge, %s applies the reviewed change sets of this plan for the stacks the merged content changes as planned; or apply exactly this plan: %s",
			Code("cairn apply PATH --deployment "+p.Deployment), Code("cairn approve "+p.Deployment+" "+p.ID))
	case "stale":
		return "this plan can no longer apply: " + replan + "; once the pull request is merged, the apply job on main plans the merged content and posts that plan on the pull request, for the gate's approval"
	case plan.Superseded:
		return "a newer plan of the same change replaces it: see that plan"
	case plan.Expired:
		return "too old to apply: " + replan
	case plan.PlanFailed:
		return "nothing can be applied: fix the bundle, then " + replan
	case plan.Late:
		return "nothing was planned: the pull request merged before this plan was made, and the plan of its merged content waits for the gate"
	case plan.ApplyFailed:
		return fmt.Sprintf("its apply failed (%s): %s says which stacks failed, why, and what to do; a plan applies at most once, so the fix goes through a new pull request and its plan",
			Text(p.Reason), Code("cairn status "+p.Deployment))
	case plan.Applied, plan.Applying:
		if p.AppliedBy != "" {
			return fmt.Sprintf("applied by run %s (%s)", Text(p.AppliedBy), Code("cairn status "+p.Deployment))
		}
		return "applied"
	}
	return ""
}

// sourceLine describes where a plan's bundle came from (as Markdown), linking its CI run
// when its address is a plain https URL.
func sourceLine(src provenance.Source) string {
	s := Text(src.String())
	if src.RunURL != "" {
		if s != "" {
			s += ", "
		}
		if linkRE.MatchString(src.RunURL) {
			s += "[CI run](" + src.RunURL + ")"
		} else {
			s += "CI run " + Text(src.RunURL)
		}
	}
	return s
}

// linkRE is an https URL that is safe as a Markdown link's destination as it is.
var linkRE = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~/%+=:@!$,;?&#-]*)?$`)

// dangers lists what cannot be undone by applying the old bundle again: deleted stacks
// and replaced resources.
func dangers(p *plan.Document, esc func(string) string) []string {
	var out []string
	order := Order(p)
	for _, s := range order {
		if s.Action == plan.Delete {
			out = append(out, fmt.Sprintf("**delete stack** %s (%s)", esc(stackName(p, s)), esc(s.Name)))
		}
	}
	for _, s := range order {
		name := esc(stackName(p, s))
		if s.Action == plan.Recreate {
			out = append(out, fmt.Sprintf("**re-create stack** %s (%s): deleted and created again", name, esc(s.Name)))
		}
		for _, c := range s.Changes {
			id, typ := esc(c.LogicalID), esc(c.Type)
			switch {
			case c.Action == "Remove":
				out = append(out, fmt.Sprintf("**remove** %s (%s) from %s", id, typ, name))
			case c.Replacement == "True":
				out = append(out, fmt.Sprintf("**replace** %s (%s) in %s", id, typ, name))
			case c.Replacement == "Conditional":
				out = append(out, fmt.Sprintf("**may replace** %s (%s) in %s", id, typ, name))
			}
		}
	}
	return out
}

func bundleLine(b plan.BundleVersion) string {
	return bundleText(b, func(s string) string { return s }, func(s string) string { return s })
}

// bundleText describes a plan's bundle, with its version id and sha256 as version and sum
// render them.
func bundleText(b plan.BundleVersion, version, sum func(string) string) string {
	s := fmt.Sprintf("s3://%s/%s", b.Bucket, b.Key)
	if b.VersionID != "" {
		s += " version " + version(b.VersionID)
	}
	if b.SHA256 != "" {
		s += ", sha256 " + sum(b.SHA256)
	}
	if b.GitRef != "" {
		s += ", git " + b.GitRef
	}
	return s
}

// PlanJSON writes the plan document as indented JSON, for tools.
func PlanJSON(w io.Writer, p *plan.Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// PlanText writes a plan for a terminal: one line per changing stack, then its resource
// changes, deletions and replacements flagged.
func PlanText(w io.Writer, p *plan.Document) error {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s of deployment %s: %s\n", Line(p.ID), Line(p.Deployment), p.Status)
	fmt.Fprintf(&b, "bundle: %s\n", Line(bundleText(p.Bundle, ShortVersion, ShortSum)))
	fmt.Fprintf(&b, "graph:  %s/%s generation %d, planned %s\n", Line(p.Namespace), Line(p.GraphKey), p.Generation, p.CreatedAt.UTC().Format(time.RFC3339))
	if p.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", Line(p.Reason))
	}
	for _, e := range p.Errors {
		fmt.Fprintf(&b, "error: %s\n", Line(e))
	}
	for _, e := range p.Refusals {
		fmt.Fprintf(&b, "refused: %s\n", Line(e))
	}
	for _, c := range p.GuardChanges() {
		fmt.Fprintf(&b, "guard: %s\n", Line(c.String()))
	}
	for _, d := range dangers(p, Line) {
		fmt.Fprintf(&b, "! %s\n", strings.ReplaceAll(d, "**", ""))
	}
	for _, d := range driftLines(Order(p)) {
		fmt.Fprintf(&b, "~ %s\n", d)
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	var params []string
	for _, s := range Order(p) {
		marks := s.Marks()
		if c := capabilities(p, s.Name); c != "" && s.Action != "none" && s.Action != "delete" {
			marks = append(marks, "capabilities: "+c)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", Line(s.Name), Line(stackName(p, s)), s.Action, Line(strings.Join(marks, ", ")))
		for _, c := range s.ParameterChanges {
			// A parameter's line stands outside the table's columns, which an empty row
			// holds its place in: a line of one cell would end the block tabwriter aligns.
			params = append(params, fmt.Sprintf("  parameter %s: %s", Line(c.Name), Line(cmp.Or(c.Old, "(none)")+" -> "+cmp.Or(c.New, "(removed)"))))
			fmt.Fprint(tw, "\t\t\t\n")
		}
		for _, c := range s.Changes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", Line(c.Action), Line(c.LogicalID), Line(c.Type), Line(replacement(c.Replacement)))
		}
		if s.Action == plan.Delete {
			for _, r := range s.Resources {
				fmt.Fprintf(tw, "  Remove\t%s\t%s\t\n", Line(r.LogicalID), Line(r.Type))
			}
		}
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if strings.TrimSpace(line) == "" && line != "" && len(params) > 0 {
			line, params = params[0]+"\n", params[1:]
		}
		b.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", Line(wn))
	}
	b.WriteString(PolicyText(p.Policy, p.Deployment, p.ID))
	switch {
	case p.Status == plan.Planned && p.Approvable() && p.Policy != nil && p.Policy.Denied:
		b.WriteString("denied by policy: fix the change and plan again, or have the policy owner override each denied rule, then approve\n")
	case p.Status == plan.Planned && !p.Approvable():
		b.WriteString("no changes: every stack is up to date; nothing to approve\n")
	case p.Status == plan.Planned:
		fmt.Fprintf(&b, "apply exactly this plan: cairn approve %s %s\n", p.Deployment, p.ID)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// at is where the plan's stack name lives, relative to cairn's account and region (the
// zero Target: there, or not known).
func at(p *plan.Document, name string) target.Target {
	if p.Run != nil {
		if s := p.Run.Stacks[name]; s != nil {
			return s.At
		}
	}
	return target.Target{}
}

// stackName is s's CloudFormation stack as people read it everywhere (target.Describe):
// its name, and where it lives when that is not cairn's account and region.
func stackName(p *plan.Document, s plan.Stack) string {
	return target.Describe(at(p, s.Name), s.StackName)
}

// capabilities describes what the plan's decision for stack name acknowledges.
func capabilities(p *plan.Document, name string) string {
	for _, d := range p.Decisions {
		if d.Stack == name {
			return d.CapabilitiesText()
		}
	}
	return ""
}

func replacement(r string) string {
	if r == "" {
		return ""
	}
	return "replacement: " + r
}

// ShortVersion shortens an S3 version id for a terminal: its last characters, which tell
// versions of one key apart (emulated ones share their beginning). Commands taking a
// version accept it so shortened. JSON and Markdown keep whole ids.
func ShortVersion(v string) string {
	const keep = 8
	if len(v) <= keep+4 {
		return v
	}
	return "…" + v[len(v)-keep:]
}

// ShortSum shortens a sha256 for a terminal, as git shortens commit ids.
func ShortSum(s string) string {
	if len(s) <= 12 {
		return s
	}
	return s[:12]
}
