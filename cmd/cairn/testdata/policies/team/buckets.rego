package team.buckets

# No bucket of the team's stacks may be public.
deny contains {"msg": sprintf("bucket %s is public", [r.logical_id]), "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::S3::Bucket"
	r.properties.AccessControl == "PublicRead"
}
