# METADATA
# title: No database reachable from the internet
# description: >-
#   Denies an RDS instance with PubliclyAccessible true, and an Amazon Redshift cluster
#   with PubliclyAccessible true.
package cairn.rds_public

types := {"AWS::RDS::DBInstance", "AWS::Redshift::Cluster"}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type in types
	truthy(r.properties.PubliclyAccessible)
	msg := sprintf("%s %s is publicly accessible: set PubliclyAccessible: false and reach it from inside the VPC (a bastion, SSM port forwarding, a VPN)", [r.type, r.logical_id])
}

truthy(true)

truthy(v) if lower(sprintf("%v", [v])) == "true"
