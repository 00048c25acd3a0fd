package cairn.rds_public_test

import data.cairn.rds_public

db(props) := {"stacks": [{"name": "data", "resources": [{"logical_id": "Db", "type": "AWS::RDS::DBInstance", "properties": props}]}]}

test_public_instance_denied if {
	count(rds_public.deny) == 1 with input as db({"PubliclyAccessible": true})
}

test_public_as_string_denied if {
	count(rds_public.deny) == 1 with input as db({"PubliclyAccessible": "true"})
}

test_private_instance_allowed if {
	count(rds_public.deny) == 0 with input as db({"PubliclyAccessible": false})
	count(rds_public.deny) == 0 with input as db({})
}
