package cairn.stateful_retain_test

import data.cairn.stateful_retain

stack(action, resources, changes) := {"stacks": [{"name": "db", "action": action, "resources": resources, "changes": changes}]}

test_replaced_table_without_policy_denied if {
	some d in stateful_retain.deny with input as stack("update",
		[{"logical_id": "Orders", "type": "AWS::DynamoDB::Table"}],
		[{"logical_id": "Orders", "type": "AWS::DynamoDB::Table", "action": "Modify", "replacement": "True"}])
	d.resource == "Orders"
}

test_conditional_replacement_denied if {
	count(stateful_retain.deny) == 1 with input as stack("update",
		[{"logical_id": "Db", "type": "AWS::RDS::DBInstance", "deletion_policy": "Retain"}],
		[{"logical_id": "Db", "type": "AWS::RDS::DBInstance", "action": "Modify", "replacement": "Conditional"}])
}

test_replaced_with_snapshot_allowed if {
	count(stateful_retain.deny) == 0 with input as stack("update",
		[{"logical_id": "Db", "type": "AWS::RDS::DBCluster", "update_replace_policy": "Snapshot"}],
		[{"logical_id": "Db", "type": "AWS::RDS::DBCluster", "action": "Modify", "replacement": "True"}])
}

test_removed_bucket_denied if {
	count(stateful_retain.deny) == 1 with input as stack("update", [], [{"logical_id": "Logs", "type": "AWS::S3::Bucket", "action": "Remove"}])
}

test_modified_in_place_allowed if {
	count(stateful_retain.deny) == 0 with input as stack("update", [], [{"logical_id": "Db", "type": "AWS::RDS::DBInstance", "action": "Modify", "replacement": "False"}])
}

test_stateless_replaced_allowed if {
	count(stateful_retain.deny) == 0 with input as stack("update", [], [{"logical_id": "Fn", "type": "AWS::Lambda::Function", "action": "Modify", "replacement": "True"}])
}

test_deleted_stack_with_table_denied if {
	count(stateful_retain.deny) == 1 with input as stack("delete", [{"logical_id": "T", "type": "AWS::DynamoDB::Table"}, {"logical_id": "Fn", "type": "AWS::Lambda::Function"}], [])
}

test_deleted_stack_with_retained_table_allowed if {
	count(stateful_retain.deny) == 0 with input as stack("delete", [{"logical_id": "T", "type": "AWS::DynamoDB::Table", "deletion_policy": "Retain"}], [])
}
