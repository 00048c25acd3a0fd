# METADATA
# title: Production changes only in the change window
# description: >-
#   Denies a change (create, update, delete, recreate, adopt; a push's deploy) of a
#   production stack outside data.config.change_window. Production is what
#   data.config.production names: deployments, stack name globs, or every protected stack
#   (protected: true). No window configured: no denial.
package cairn.change_window

changing := {"create", "update", "delete", "recreate", "adopt", "deploy"}

deny contains {"msg": msg, "stack": s.name} if {
	w := data.config.change_window
	some s in input.stacks
	s.action in changing
	production(s)
	not within(w)
	msg := sprintf("stack %s is production, and %s is outside its change window (%s %s-%s %s): apply it within the window, or have the policy owner override", [s.name, input.time, concat(",", w.days), w.start, w.end, zone(w)])
}

production(_) if input.deployment in data.config.production.deployments

production(s) if {
	some pattern in data.config.production.stacks
	glob.match(pattern, [], s.name)
}

production(s) if {
	data.config.production.protected == true
	s.protected == true
}

within(w) if {
	at := [input.time_ns, zone(w)]
	time.weekday(at) in w.days
	[hour, minute, _] := time.clock(at)
	now := (hour * 60) + minute
	now >= minutes(w.start)
	now < minutes(w.end)
}

zone(w) := object.get(w, "timezone", "UTC")

minutes(hhmm) := n if {
	[h, m] := split(hhmm, ":")
	n := (to_number(h) * 60) + to_number(m)
}
