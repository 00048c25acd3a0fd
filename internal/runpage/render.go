package runpage

// writeRun writes a run's page.
func writeRun(v runView) []byte {
	var p page
	p.head(v.PageTitle, v.Refresh)
	p.h("<header>\n<h1>Run <code>%s</code> of <code>%s</code>: <span class=\"badge %s\" id=\"run-status\">%s</span></h1>\n", v.ID, v.Deployment, v.StatusClass, v.Status)
	p.links(v.Links)
	finished := ""
	if v.Finished != "" {
		finished = v.Finished + " (" + v.Duration + ")"
	}
	counts := ""
	for i, c := range v.Counts {
		if i > 0 {
			counts += ", "
		}
		counts += c.Value + " " + c.Name
	}
	p.facts([2]string{"Mode", v.Mode}, [2]string{"Bundle", v.Bundle}, [2]string{"Started", v.Started}, [2]string{"Finished", finished},
		[2]string{"Reason", v.Reason}, [2]string{"Stacks", counts})
	if v.Refresh > 0 {
		p.h("<p class=\"muted\">The run is still running: this page loads itself again every %s seconds.</p>\n", itoa(v.Refresh))
	}
	p.raw("</header>\n<main>\n")
	p.notes(v.Warnings, v.Notes, v.Errors, v.Refusals, "nothing was changed")
	p.policy(v.Policy)
	if len(v.Failed) > 0 || v.Next != nil {
		p.raw("<section aria-labelledby=\"failures\" class=\"note fail\">\n<h2 id=\"failures\">What failed, and what to do</h2>\n")
		if len(v.Failed) > 0 {
			p.raw("<ul>")
			for _, s := range v.Failed {
				p.h("<li class=\"failure\"><a href=\"#%s\">%s</a>", s.ID, s.Name)
				if s.CFN != "" {
					p.h(" (%s)", s.CFN)
				}
				p.h(": <span class=\"reason\">%s</span>", s.Reason)
				if s.Failure != "" {
					p.h(" <span class=\"muted\">[%s]</span>", s.Failure)
				}
				p.raw("</li>")
			}
			p.raw("</ul>\n")
		}
		if n := v.Next; n != nil {
			p.h("<p id=\"next-step\">Next: %s: <code>%s</code>", n.Why, n.Command)
			if n.Then != "" {
				p.h(", then <code>%s</code>", n.Then)
			}
			p.raw("</p>\n")
		}
		p.raw("</section>\n")
	}
	p.raw("<section aria-labelledby=\"graph-h\">\n<h2 id=\"graph-h\">Graph</h2>\n")
	p.raw("<ul class=\"legend\" aria-label=\"Colours\"><li><span class=\"badge ok\">done</span></li><li><span class=\"badge busy\">in progress</span></li><li><span class=\"badge bad\">failed</span></li><li><span class=\"badge blocked\">blocked</span></li><li><span class=\"badge none\">unchanged</span></li><li><span class=\"badge wait\">pending</span></li><li>thick border, orange arrows: critical path</li></ul>\n")
	p.graph(v.Graph)
	p.raw("</section>\n")
	p.drift(v.Drift)
	p.timeline(v)
	p.raw("<section aria-labelledby=\"stacks-h\">\n<h2 id=\"stacks-h\">Stacks</h2>\n")
	for _, s := range v.Stacks {
		p.runStack(s)
	}
	p.raw("</section>\n")
	return p.end()
}

// timeline writes the run's timeline: the stacks that started, in the order they did.
func (p *page) timeline(v runView) {
	p.raw("<section aria-labelledby=\"timeline-h\">\n<h2 id=\"timeline-h\">Timeline</h2>\n")
	if len(v.Timeline) == 0 {
		p.raw("<p>No stack started.</p>\n")
	} else {
		p.h("<p class=\"muted\">From %s to %s; stacks in the order they started; the shaded end of a bar is the execution of its change set.", v.From, v.To)
		if len(v.Critical) > 0 {
			p.raw(" Critical path: <span id=\"critical-path\">")
			p.joined(v.Critical, " → ")
			p.raw("</span>.")
		}
		p.raw("</p>\n<ol class=\"timeline\" id=\"timeline\">\n")
		for _, r := range v.Timeline {
			crit, note := "", ""
			if r.Crit {
				crit, note = " class=\"crit\"", ", critical path"
			}
			p.h("<li data-stack=\"%s\"", r.Name)
			p.raw(crit)
			p.h("><a class=\"tl-name\" href=\"#%s\" title=\"%s\">%s</a>", r.ID, r.Name, r.Name)
			p.h("<span class=\"track\" role=\"img\" aria-label=\"%s to %s\"><span class=\"bar %s\" style=\"left:%s%%;width:%s%%\">", r.Start, r.End, r.Class, pct(r.Bar.Left), pct(r.Bar.Width))
			if r.Bar.Exec > 0 {
				p.h("<span class=\"exec\" style=\"left:%s%%\"></span>", pct(r.Bar.Exec))
			}
			p.h("</span></span><span class=\"tl-time\">%s, %s%s</span></li>\n", r.Duration, r.Phase, note)
		}
		p.raw("</ol>\n")
	}
	if v.NotStarted > 0 {
		p.h("<p class=\"muted\">%s stack(s) did not start.</p>\n", itoa(v.NotStarted))
	}
	p.raw("</section>\n")
}

// details opens a stack's expandable section.
func (p *page) details(id, name string, open bool) {
	p.h("<details id=\"%s\" class=\"stack\" data-stack=\"%s\"", id, name)
	if open {
		p.raw(" open")
	}
	p.raw(">\n")
}

// runStack writes one stack's section of a run's page.
func (p *page) runStack(s stackView) {
	p.details(s.ID, s.Name, s.Open)
	p.h("<summary><span class=\"name\">%s</span> <span class=\"badge %s phase\">%s</span> <span>%s</span>", s.Name, s.Class, s.Phase, s.Action)
	if s.Duration != "" {
		p.h(" <span class=\"muted\">%s</span>", s.Duration)
	}
	if s.Crit {
		p.raw(" <span class=\"muted\">critical path</span>")
	}
	p.raw("</summary>\n")
	waits := ""
	for i, w := range s.Waits {
		if i > 0 {
			waits += ", "
		}
		waits += w
	}
	changeSet := s.ChangeSet
	if changeSet != "" && s.Changes != "" {
		changeSet += ", " + s.Changes + " change(s)"
	}
	p.facts([2]string{"CloudFormation stack", s.Where}, [2]string{"Status as last seen", s.CFN}, [2]string{"Waits for", waits},
		[2]string{"Started", s.Started}, [2]string{"Change set executed", s.Executed}, [2]string{"Finished", s.Finished},
		[2]string{"Change set", changeSet}, [2]string{"Reason", s.Reason}, [2]string{"Failure class", s.Failure})
	p.resources(s)
	p.table("Parameters", []string{"Name", "Value"}, pairRows(s.Params), nil)
	p.table("Outputs", []string{"Name", "Value"}, pairRows(s.Outputs), nil)
	p.raw("</details>\n")
}

// resources writes a stack's resources (the failed first, each failure's reason marked)
// and their events in time order (a failure's row and reason marked; the list open when
// one failed). Their header cells are the tables' first row, in thead: column headers
// without a scope to say so, which keeps a 200-stack page some 20 KB smaller.
func (p *page) resources(s stackView) {
	if len(s.Resources) == 0 {
		return
	}
	p.h("<table class=\"resources\"><caption>Resources (%s)</caption><thead><tr><th>Logical id</th><th>Type</th><th>Status</th><th>Physical id</th><th>Reason</th></tr></thead><tbody>", itoa(len(s.Resources)))
	failed := false
	for _, r := range s.Resources {
		if r.Failed {
			failed = true
			p.h("<tr class=\"danger\"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td><mark class=\"reason\">%s</mark></td></tr>", r.LogicalID, r.Type, r.Status, r.PhysicalID, r.Reason)
			continue
		}
		p.h("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", r.LogicalID, r.Type, r.Status, r.PhysicalID, r.Reason)
	}
	p.raw("</tbody></table>\n<details class=\"events\"")
	if failed {
		p.raw(" open")
	}
	p.h("><summary>Events (%s, in time order)</summary>", itoa(len(s.Events)))
	if s.Dropped > 0 {
		p.h("<p class=\"muted\">%s more not kept (the run keeps a stack's failures and its latest events).</p>", itoa(s.Dropped))
	}
	p.raw("<table><thead><tr><th>Time (UTC)</th><th>Resource</th><th>Status</th><th>Reason</th></tr></thead><tbody>")
	for _, e := range s.Events {
		if e.Failed {
			p.h("<tr class=\"danger\"><td>%s</td><td>%s</td><td>%s</td><td><mark class=\"reason\">%s</mark></td></tr>", e.Time, e.LogicalID, e.Status, e.Reason)
			continue
		}
		p.h("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", e.Time, e.LogicalID, e.Status, e.Reason)
	}
	p.raw("</tbody></table></details>\n")
}

func pairRows(ps []pair) [][]string {
	rows := make([][]string, len(ps))
	for i, kv := range ps {
		rows[i] = []string{kv.Name, kv.Value}
	}
	return rows
}

// writePlan writes a plan's page.
func writePlan(v planView) []byte {
	var p page
	p.head(v.PageTitle, 0)
	p.h("<header>\n<h1>%s <code>%s</code> of <code>%s</code>: <span class=\"badge %s\" id=\"plan-status\">%s</span></h1>\n", v.Title, v.ID, v.Deployment, v.StatusClass, v.Status)
	p.links(v.Links)
	p.facts([2]string{"Bundle", v.Bundle}, [2]string{"Graph", v.Graph}, [2]string{"Planned", v.Created}, [2]string{"Reason", v.Reason})
	if v.Approve != "" {
		p.h("<p id=\"next-step\">Next: apply exactly this plan: <code>%s</code></p>\n", v.Approve)
	}
	p.raw("</header>\n<main>\n")
	p.notes(v.Warnings, v.Notes, v.Errors, v.Refusals, "nothing was planned")
	p.policy(v.Policy)
	if len(v.Dangers) > 0 {
		p.raw("<section aria-labelledby=\"dangers\" class=\"note fail\">\n<h2 id=\"dangers\">Deletions and replacements</h2>\n<ul>")
		for _, d := range v.Dangers {
			p.h("<li><strong>%s</strong> %s in <a href=\"%s\">%s</a></li>", d.Kind, d.What, safeHref(d.Href), d.Stack)
		}
		p.raw("</ul>\n</section>\n")
	}
	p.drift(v.Drift)
	p.raw("<section aria-labelledby=\"graph-h\">\n<h2 id=\"graph-h\">Graph</h2>\n")
	p.raw("<ul class=\"legend\" aria-label=\"Colours\"><li><span class=\"badge ok\">create</span></li><li><span class=\"badge busy\">update</span></li><li><span class=\"badge replace\">replace or re-create</span></li><li><span class=\"badge bad\">delete</span></li><li><span class=\"badge none\">unchanged</span></li></ul>\n")
	p.graph(v.SVG)
	p.raw("</section>\n<section aria-labelledby=\"stacks-h\">\n<h2 id=\"stacks-h\">Change sets: deletions and replacements first</h2>\n")
	for _, s := range v.Stacks {
		p.planStack(s)
	}
	if len(v.Unchanged) > 0 {
		p.raw("<p>Unchanged: ")
		p.joined(v.Unchanged, ", ")
		p.raw(".</p>\n")
	}
	p.raw("</section>\n")
	return p.end()
}

// planStack writes one stack's section of a plan's page.
func (p *page) planStack(s planStackView) {
	p.details(s.ID, s.Name, s.Open)
	p.h("<summary><span class=\"name\">%s</span> <span class=\"badge %s phase\">%s</span>", s.Name, s.Class, s.Action)
	if s.Replacements > 0 {
		p.h(" <span>%s replacement(s)</span>", itoa(s.Replacements))
	}
	p.h(" <span class=\"muted\">%s</span></summary>\n", s.Summary)
	marks := ""
	for i, m := range s.Marks {
		if i > 0 {
			marks += "; "
		}
		marks += m
	}
	p.facts([2]string{"CloudFormation stack", s.Where}, [2]string{"Change set", s.ChangeSet}, [2]string{"Reason", s.Reason}, [2]string{"Notes", marks})
	var rows [][]string
	for _, c := range s.Changes {
		details := ""
		for i, d := range c.Details {
			if i > 0 {
				details += "; "
			}
			details += d
		}
		rows = append(rows, []string{c.Action, c.LogicalID, c.Type, c.Replacement, details})
	}
	p.table("Resource changes", []string{"Action", "Logical id", "Type", "Replacement", "Details"}, rows, func(i int) bool { return s.Changes[i].Danger })
	rows = nil
	for _, c := range s.Params {
		rows = append(rows, []string{c.Name, c.Old, c.New})
	}
	p.table("Parameters changed", []string{"Name", "Old", "New"}, rows, nil)
	rows = nil
	for _, r := range s.Resources {
		typ := r.Type
		if r.Reason != "" {
			typ += " (" + r.Reason + ")"
		}
		rows = append(rows, []string{r.LogicalID, typ})
	}
	p.table("Resources", []string{"Logical id", "Type"}, rows, nil)
	p.raw("</details>\n")
}

// writeIndex writes the index of deployments.
func writeIndex(title string, deployments []deploymentView) []byte {
	var p page
	p.head(title, 0)
	p.h("<header><h1>%s</h1></header>\n<main>\n", title)
	if len(deployments) == 0 {
		p.raw("<p>No deployment yet.</p>\n")
	}
	for _, d := range deployments {
		p.h("<section aria-label=\"%s\">\n<h2>%s</h2>\n", d.Name, d.Name)
		for _, part := range []struct {
			title   string
			entries []entryView
		}{{"Runs", d.Runs}, {"Plans", d.Plans}, {"Drift", d.Drift}} {
			if part.title == "Drift" && len(part.entries) == 0 {
				continue
			}
			p.h("<h3>%s</h3>", part.title)
			if len(part.entries) == 0 {
				p.raw("<p class=\"muted\">None.</p>\n")
				continue
			}
			p.raw("<ul>")
			for _, e := range part.entries {
				p.h("<li><a href=\"%s\">%s</a> <span class=\"badge %s\">%s</span> <span class=\"muted\">%s</span></li>", safeHref(e.Href), e.ID, e.Class, e.Status, e.When)
			}
			p.raw("</ul>\n")
		}
		p.raw("</section>\n")
	}
	return p.end()
}
