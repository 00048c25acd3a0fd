package cairn.region_test

import data.cairn.region

stacks := {"stacks": [
	{"name": "eu", "action": "update", "region": "eu-west-1"},
	{"name": "us", "action": "create", "region": "us-east-1"},
	{"name": "home", "action": "create"},
	{"name": "gone", "action": "delete", "region": "ap-south-1"},
]}

test_region_outside_list_denied if {
	denied := {d.stack | some d in region.deny} with input as stacks with data.config as {"allowed_regions": ["eu-west-1"], "home_region": "us-west-2"}
	denied == {"us", "home"}
}

test_home_region_unknown_not_judged if {
	denied := {d.stack | some d in region.deny} with input as stacks with data.config as {"allowed_regions": ["eu-west-1"]}
	denied == {"us"}
}

test_no_list_no_denial if {
	count(region.deny) == 0 with input as stacks with data.config as {}
}
