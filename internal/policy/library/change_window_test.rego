package cairn.change_window_test

import data.cairn.change_window

window := {
	"change_window": {"days": ["Monday", "Tuesday", "Wednesday", "Thursday"], "start": "09:00", "end": "16:00", "timezone": "UTC"},
	"production": {"deployments": ["shop-prod"], "stacks": ["prod-*"], "protected": true},
}

plan_at(when, deployment, stacks) := {"deployment": deployment, "time": when, "time_ns": time.parse_rfc3339_ns(when), "stacks": stacks}

# 2026-12-05 is a Saturday, 2026-12-07 a Monday.
test_production_deployment_on_saturday_denied if {
	count(change_window.deny) == 1 with input as plan_at("2026-12-05T10:00:00Z", "shop-prod", [{"name": "api", "action": "update"}])
		with data.config as window
}

test_production_deployment_in_window_allowed if {
	count(change_window.deny) == 0 with input as plan_at("2026-12-07T10:00:00Z", "shop-prod", [{"name": "api", "action": "update"}])
		with data.config as window
}

test_after_hours_denied if {
	count(change_window.deny) == 1 with input as plan_at("2026-12-07T16:00:00Z", "shop", [{"name": "prod-db", "action": "delete"}])
		with data.config as window
}

test_protected_stack_denied_and_others_allowed if {
	denied := {d.stack | some d in change_window.deny} with input as plan_at("2026-12-07T07:00:00Z", "shop", [
		{"name": "db", "action": "update", "protected": true},
		{"name": "web", "action": "update"},
		{"name": "cache", "action": "check", "protected": true},
	])
		with data.config as window
	denied == {"db"}
}

test_no_window_no_denial if {
	count(change_window.deny) == 0 with input as plan_at("2026-12-05T10:00:00Z", "shop-prod", [{"name": "api", "action": "update"}])
		with data.config as {"production": {"deployments": ["shop-prod"]}}
}
