package cairn.encryption_test

import data.cairn.encryption

with_resources(rs) := {"stacks": [{"name": "data", "action": "create", "resources": rs}]}

test_unencrypted_database_denied if {
	some d in encryption.deny with input as with_resources([{"logical_id": "Db", "type": "AWS::RDS::DBInstance", "properties": {"Engine": "postgres"}}])
	d.resource == "Db"
}

test_efs_false_denied if {
	count(encryption.deny) == 1 with input as with_resources([{"logical_id": "Fs", "type": "AWS::EFS::FileSystem", "properties": {"Encrypted": "false"}}])
}

test_encrypted_allowed if {
	count(encryption.deny) == 0 with input as with_resources([
		{"logical_id": "Db", "type": "AWS::RDS::DBCluster", "properties": {"StorageEncrypted": true}},
		{"logical_id": "Vol", "type": "AWS::EC2::Volume", "properties": {"Encrypted": "true"}},
	])
}

test_aurora_member_not_judged if {
	count(encryption.deny) == 0 with input as with_resources([{"logical_id": "Writer", "type": "AWS::RDS::DBInstance", "properties": {"DBClusterIdentifier": {"Ref": "Cluster"}}}])
}

test_computed_encryption_warned if {
	r := [{"logical_id": "Fs", "type": "AWS::EFS::FileSystem", "properties": {"Encrypted": {"Ref": "Encrypt"}}}]
	count(encryption.deny) == 0 with input as with_resources(r)
	count(encryption.warn) == 1 with input as with_resources(r)
}
