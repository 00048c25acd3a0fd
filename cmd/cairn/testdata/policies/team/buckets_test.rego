package team.buckets_test

import data.team.buckets

test_public_denied if {
	count(buckets.deny) == 1 with input as {"stacks": [{"name": "web", "resources": [{"logical_id": "Site", "type": "AWS::S3::Bucket", "properties": {"AccessControl": "PublicRead"}}]}]}
}
