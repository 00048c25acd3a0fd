# METADATA
# title: No S3 bucket made public
# description: >-
#   Denies a bucket whose public access block turns a setting off, a bucket with a public
#   canned ACL, and a bucket policy statement that allows Principal "*" without a Condition.
package cairn.s3_public

block_settings := ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"]

public_acls := {"PublicRead", "PublicReadWrite", "AuthenticatedRead"}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::S3::Bucket"
	some setting in block_settings
	off(r.properties.PublicAccessBlockConfiguration[setting])
	msg := sprintf("bucket %s turns %s off: keep every setting of PublicAccessBlockConfiguration true, and serve public content through CloudFront", [r.logical_id, setting])
}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::S3::Bucket"
	r.properties.AccessControl in public_acls
	msg := sprintf("bucket %s has the public ACL %s: drop AccessControl (buckets are private) and grant access through a bucket policy naming principals", [r.logical_id, r.properties.AccessControl])
}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::S3::BucketPolicy"
	some st in as_array(r.properties.PolicyDocument.Statement)
	st.Effect == "Allow"
	anyone(st.Principal)
	not st.Condition
	msg := sprintf("bucket policy %s allows Principal \"*\" without a Condition: name the principals, or add a Condition (aws:SourceArn, aws:PrincipalOrgID)", [r.logical_id])
}

off(v) if v == false

off(v) if lower(sprintf("%v", [v])) == "false"

anyone("*")

anyone(p) if p.AWS == "*"

anyone(p) if "*" in p.AWS

as_array(x) := x if is_array(x)

as_array(x) := [x] if not is_array(x)
