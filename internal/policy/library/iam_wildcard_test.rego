package cairn.iam_wildcard_test

import data.cairn.iam_wildcard

with_resource(r) := {"stacks": [{"name": "api", "resources": [r]}]}

managed(statement) := with_resource({"logical_id": "P", "type": "AWS::IAM::ManagedPolicy", "properties": {"PolicyDocument": {"Statement": statement}}})

test_star_on_star_denied if {
	count(iam_wildcard.deny) == 1 with input as managed([{"Effect": "Allow", "Action": "*", "Resource": "*"}])
}

test_iam_star_in_list_denied if {
	count(iam_wildcard.deny) == 1 with input as managed([{"Effect": "Allow", "Action": ["sqs:SendMessage", "IAM:*"], "Resource": ["*"]}])
}

test_s3_star_in_role_inline_policy_denied if {
	some d in iam_wildcard.deny with input as with_resource({"logical_id": "Role", "type": "AWS::IAM::Role", "properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}}}]}})
	d.resource == "Role"
}

test_s3_star_on_one_bucket_allowed if {
	count(iam_wildcard.deny) == 0 with input as managed([{"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::site/*"}])
}

test_named_actions_on_star_allowed if {
	count(iam_wildcard.deny) == 0 with input as managed([{"Effect": "Allow", "Action": ["s3:GetObject", "logs:PutLogEvents"], "Resource": "*"}])
}

test_deny_statement_allowed if {
	count(iam_wildcard.deny) == 0 with input as managed([{"Effect": "Deny", "Action": "*", "Resource": "*"}])
}
