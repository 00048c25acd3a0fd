# METADATA
# title: Storage encrypted at rest
# description: >-
#   Denies an RDS instance (outside an Aurora cluster) or cluster, an EFS file system, an
#   EBS volume or an ElastiCache replication group whose encryption property is missing or
#   false; warns when the template computes it (an intrinsic function), which cairn cannot
#   judge before the change set runs.
package cairn.encryption

property := {
	"AWS::RDS::DBInstance": "StorageEncrypted",
	"AWS::RDS::DBCluster": "StorageEncrypted",
	"AWS::EFS::FileSystem": "Encrypted",
	"AWS::EC2::Volume": "Encrypted",
	"AWS::ElastiCache::ReplicationGroup": "AtRestEncryptionEnabled",
}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in judged(s)
	p := property[r.type]
	v := object.get(r, ["properties", p], false)
	not is_object(v)
	not truthy(v)
	msg := sprintf("%s %s is not encrypted at rest: set %s: true (with KmsKeyId for a key of your own)", [r.type, r.logical_id, p])
}

warn contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in judged(s)
	p := property[r.type]
	is_object(r.properties[p])
	msg := sprintf("%s %s computes %s (%v): cairn cannot tell whether it will be encrypted; make it true", [r.type, r.logical_id, p, r.properties[p]])
}

# judged are the stack's resources of the template, an Aurora cluster's instances left
# out (the cluster's StorageEncrypted decides); a stack being deleted adds nothing.
judged(s) := [r |
	not s.action in {"delete", "drop"}
	some r in s.resources
	r.type in object.keys(property)
	not aurora_member(r)
]

aurora_member(r) if {
	r.type == "AWS::RDS::DBInstance"
	r.properties.DBClusterIdentifier
}

truthy(true)

truthy(v) if lower(sprintf("%v", [v])) == "true"
