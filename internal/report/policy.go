package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/verdict"
)

// PolicyMarkdown is the "Policy" section of a plan's comment or a run's report: each
// result (level, rule, origin, stack, resource, message), the overrides that lift a
// rule's denials (with their reason and author), where the policies were read, and for
// a plan with a standing denial the commands that proceed. "" when nothing was judged.
func PolicyMarkdown(v *verdict.Verdict, deployment, planID string) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	deny, warn, lifted := v.Counts()
	fmt.Fprintf(&b, "## Policy: %s\n\n", policyOutcome(v, deny, warn, lifted))
	if v.Error != "" {
		fmt.Fprintf(&b, "- **The policies could not be evaluated**, which counts as a denial no override lifts: %s\n\n", Text(v.Error))
	}
	if len(v.Results) > 0 {
		b.WriteString("| Level | Rule | Origin | Stack | Resource | Message |\n|---|---|---|---|---|---|\n")
		for _, r := range v.Results {
			level := r.Level
			if r.Level == verdict.Deny && v.Overridden(r.Rule) {
				level = "deny (overridden)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", Cell(level), CodeCell(r.Rule), Cell(r.Origin), Cell(r.Stack), Cell(r.Resource), Cell(r.Msg))
		}
		b.WriteString("\n")
	}
	for _, o := range v.Overrides {
		fmt.Fprintf(&b, "- Override of %s by %s at %s: %s\n", Code(o.Rule), Text(o.By), stamp(o.At), Text(o.Reason))
	}
	if len(v.Overrides) > 0 {
		b.WriteString("\n")
	}
	if rules := standingRules(v); len(rules) > 0 && planID != "" && v.Error == "" {
		b.WriteString("This plan cannot be approved or applied while a denial stands: fix the change and plan again, or have the policy owner override each rule for this plan:\n\n")
		for _, rule := range rules {
			fmt.Fprintf(&b, "- %s\n", Code(fmt.Sprintf("cairn policy override %s %s %s --reason TEXT", deployment, planID, rule)))
		}
		b.WriteString("\n")
	}
	b.WriteString(policySource(v.Source) + "\n\n")
	return b.String()
}

func policyOutcome(v *verdict.Verdict, deny, warn, lifted int) string {
	s := "passed"
	if v.Denied {
		s = "**denied**"
	}
	return fmt.Sprintf("%s (%d denied, %d overridden, %d warnings)", s, deny, lifted, warn)
}

func standingRules(v *verdict.Verdict) []string {
	var rules []string
	for _, r := range v.Standing() {
		if !slices.Contains(rules, r.Rule) {
			rules = append(rules, r.Rule)
		}
	}
	return rules
}

// policySource says where the policies judged were read.
func policySource(src verdict.Source) string {
	var parts []string
	if src.Bucket != "" {
		var objs []string
		for _, o := range src.Objects {
			objs = append(objs, fmt.Sprintf("%s (version %s, ETag %s)", o.Key, ShortVersion(o.VersionID), strings.Trim(o.ETag, `"`)))
		}
		team := fmt.Sprintf("team policies from s3://%s/%s: %d file(s)", src.Bucket, src.Prefix, len(src.Objects))
		if len(objs) > 0 {
			team += ": " + strings.Join(objs, ", ")
		}
		parts = append(parts, team)
	}
	if src.BundleDir != "" {
		parts = append(parts, fmt.Sprintf("bundle policies from %s: %d file(s)", src.BundleDir, src.BundleFiles))
	}
	if len(parts) == 0 {
		return "Judged with no policies."
	}
	return "Read: " + Text(strings.Join(parts, "; ")) + "."
}

// PolicyText is the policy verdict as `cairn plan` and `cairn plans` print it: one line
// per result, then overrides and the outcome.
func PolicyText(v *verdict.Verdict, deployment, planID string) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	if v.Error != "" {
		fmt.Fprintf(&b, "policy error (a denial): %s\n", Line(v.Error))
	}
	for _, r := range v.Results {
		level := r.Level
		if r.Level == verdict.Deny && v.Overridden(r.Rule) {
			level = "deny (overridden)"
		}
		where := r.Where()
		if where != "" {
			where = " " + where
		}
		fmt.Fprintf(&b, "policy %s %s (%s policy)%s: %s\n", level, Line(r.Rule), Line(r.Origin), Line(where), Line(r.Msg))
	}
	for _, o := range v.Overrides {
		fmt.Fprintf(&b, "policy override of %s by %s at %s: %s\n", Line(o.Rule), Line(o.By), o.At.UTC().Format(time.RFC3339), Line(o.Reason))
	}
	deny, warn, lifted := v.Counts()
	outcome := "passed"
	if v.Denied {
		outcome = "DENIED"
	}
	fmt.Fprintf(&b, "policy: %s (%d denied, %d overridden, %d warnings)\n", outcome, deny, lifted, warn)
	if v.Denied && v.Error == "" && planID != "" {
		for _, rule := range standingRules(v) {
			fmt.Fprintf(&b, "  to override: cairn policy override %s %s %s --reason TEXT\n", deployment, planID, rule)
		}
	}
	return b.String()
}
