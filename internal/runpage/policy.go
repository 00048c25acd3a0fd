package runpage

import (
	"fmt"

	"github.com/cairn-dev/cairn/internal/verdict"
)

// policy writes the policies' verdict on a plan or run: its outcome, each result (a
// standing denial marked), and the overrides that lift a rule's denials.
func (p *page) policy(v *verdict.Verdict) {
	if v == nil {
		return
	}
	deny, warn, lifted := v.Counts()
	class, outcome := "note", "passed"
	if v.Denied {
		class, outcome = "note fail", "denied"
	}
	p.h("<section aria-labelledby=\"policy-h\" class=\"%s\">\n<h2 id=\"policy-h\">Policy: %s</h2>\n", class,
		fmt.Sprintf("%s (%d denied, %d overridden, %d warnings)", outcome, deny, lifted, warn))
	if v.Error != "" {
		p.h("<p class=\"reason\">The policies could not be evaluated, which counts as a denial: %s</p>\n", clean(v.Error))
	}
	rows := make([][]string, len(v.Results))
	for i, r := range v.Results {
		level := r.Level
		if r.Level == verdict.Deny && v.Overridden(r.Rule) {
			level = "deny (overridden)"
		}
		rows[i] = []string{level, clean(r.Rule), clean(r.Origin), clean(r.Stack), clean(r.Resource), clean(r.Msg)}
	}
	p.table("Results", []string{"Level", "Rule", "Origin", "Stack", "Resource", "Message"}, rows, func(i int) bool {
		return v.Results[i].Level == verdict.Deny && !v.Overridden(v.Results[i].Rule)
	})
	for _, o := range v.Overrides {
		p.h("<p class=\"override\">Override of <code>%s</code> by %s at %s: %s</p>\n", clean(o.Rule), clean(o.By), stamp(o.At), clean(o.Reason))
	}
	p.raw("</section>\n")
}
