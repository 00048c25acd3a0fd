package shop.tags

deny contains {"msg": sprintf("bucket %s has no tags", [r.logical_id]), "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::S3::Bucket"
	not r.properties.Tags
}
