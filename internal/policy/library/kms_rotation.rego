# METADATA
# title: KMS keys rotate
# description: >-
#   Denies a symmetric encryption KMS key (the default key spec) without EnableKeyRotation
#   true. Asymmetric and HMAC keys cannot rotate and are not judged.
package cairn.kms_rotation

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	r.type == "AWS::KMS::Key"
	object.get(r, ["properties", "KeySpec"], "SYMMETRIC_DEFAULT") == "SYMMETRIC_DEFAULT"
	not rotates(r)
	msg := sprintf("KMS key %s does not rotate: set EnableKeyRotation: true", [r.logical_id])
}

rotates(r) if r.properties.EnableKeyRotation == true

rotates(r) if lower(sprintf("%v", [r.properties.EnableKeyRotation])) == "true"
