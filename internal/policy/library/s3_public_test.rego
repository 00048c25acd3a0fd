package cairn.s3_public_test

import data.cairn.s3_public

bucket(props) := {"stacks": [{"name": "web", "resources": [{"logical_id": "Site", "type": "AWS::S3::Bucket", "properties": props}]}]}

test_public_access_block_off_denied if {
	some d in s3_public.deny with input as bucket({"PublicAccessBlockConfiguration": {"BlockPublicAcls": true, "BlockPublicPolicy": false}})
	d.resource == "Site"
	contains(d.msg, "BlockPublicPolicy")
}

test_public_access_block_off_as_string_denied if {
	count(s3_public.deny) == 1 with input as bucket({"PublicAccessBlockConfiguration": {"RestrictPublicBuckets": "false"}})
}

test_public_acl_denied if {
	count(s3_public.deny) == 1 with input as bucket({"AccessControl": "PublicRead"})
}

test_private_bucket_allowed if {
	count(s3_public.deny) == 0 with input as bucket({"AccessControl": "Private", "PublicAccessBlockConfiguration": {"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}})
}

bucket_policy(statement) := {"stacks": [{"name": "web", "resources": [{"logical_id": "SitePolicy", "type": "AWS::S3::BucketPolicy", "properties": {"PolicyDocument": {"Statement": statement}}}]}]}

test_policy_principal_star_denied if {
	count(s3_public.deny) == 1 with input as bucket_policy([{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::site/*"}])
}

test_policy_principal_aws_star_single_statement_denied if {
	count(s3_public.deny) == 1 with input as bucket_policy({"Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": "s3:GetObject"})
}

test_policy_principal_star_with_condition_allowed if {
	count(s3_public.deny) == 0 with input as bucket_policy([{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-123"}}}])
}

test_policy_deny_statement_allowed if {
	count(s3_public.deny) == 0 with input as bucket_policy([{"Effect": "Deny", "Principal": "*", "Action": "s3:*"}])
}
