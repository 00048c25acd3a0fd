# METADATA
# title: No stateful resource lost without a retention policy
# description: >-
#   Denies the deletion or replacement of a stateful resource (databases, tables, buckets,
#   file systems, caches, queues, volumes, keys, ...) unless the template keeps it: a
#   DeletionPolicy (deletion) or UpdateReplacePolicy (replacement) of Retain or Snapshot.
#   A resource removed from its template is judged by the template without it, which no
#   longer says: set DeletionPolicy Retain first, apply, then remove it.
package cairn.stateful_retain

stateful := {
	"AWS::RDS::DBInstance", "AWS::RDS::DBCluster", "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable",
	"AWS::S3::Bucket", "AWS::EFS::FileSystem", "AWS::FSx::FileSystem", "AWS::ElastiCache::CacheCluster",
	"AWS::ElastiCache::ReplicationGroup", "AWS::ElastiCache::ServerlessCache", "AWS::MemoryDB::Cluster",
	"AWS::Neptune::DBCluster", "AWS::DocDB::DBCluster", "AWS::Redshift::Cluster", "AWS::OpenSearchService::Domain",
	"AWS::EC2::Volume", "AWS::KMS::Key", "AWS::SQS::Queue", "AWS::Kinesis::Stream", "AWS::Cognito::UserPool",
	"AWS::Backup::BackupVault", "AWS::ECR::Repository", "AWS::Logs::LogGroup",
}

kept := {"Retain", "Snapshot", "RetainExceptOnCreate"}

# A resource the change set removes.
deny contains {"msg": msg, "stack": s.name, "resource": c.logical_id} if {
	some s in input.stacks
	some c in s.changes
	c.action == "Remove"
	c.type in stateful
	not retained(s, c.logical_id, "deletion_policy")
	msg := sprintf("%s %s is deleted without DeletionPolicy Retain or Snapshot: set DeletionPolicy: Retain (or Snapshot) on it and apply that first, or take a backup and have the policy owner override", [c.type, c.logical_id])
}

# A resource the change set replaces (or may replace).
deny contains {"msg": msg, "stack": s.name, "resource": c.logical_id} if {
	some s in input.stacks
	some c in s.changes
	c.action == "Modify"
	c.replacement in {"True", "Conditional"}
	c.type in stateful
	not retained(s, c.logical_id, "update_replace_policy")
	msg := sprintf("%s %s is replaced (replacement %s) without UpdateReplacePolicy Retain or Snapshot: set UpdateReplacePolicy: Snapshot (or Retain), or change it without replacing it", [c.type, c.logical_id, c.replacement])
}

# A stack the plan deletes: each stateful resource it holds goes with it.
deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	s.action == "delete"
	some r in s.resources
	r.type in stateful
	not retained(s, r.logical_id, "deletion_policy")
	msg := sprintf("stack %s is deleted with %s %s, whose DeletionPolicy is not Retain or Snapshot: set it and apply before deleting the stack", [s.name, r.type, r.logical_id])
}

# retained: the stack's template keeps resource id by field (deletion_policy or
# update_replace_policy).
retained(s, id, field) if {
	some r in s.resources
	r.logical_id == id
	r[field] in kept
}
