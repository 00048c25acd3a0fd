# METADATA
# title: No IAM wildcard on every resource
# description: >-
#   Denies an IAM policy statement (of a policy, managed policy, role, user or group) that
#   allows Action "*", "iam:*" or "s3:*" on Resource "*".
package cairn.iam_wildcard

wildcards := {"*", "iam:*", "s3:*"}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	some doc in documents(r)
	some st in as_array(doc.Statement)
	st.Effect == "Allow"
	some action in as_array(st.Action)
	lower(action) in wildcards
	"*" in as_array(st.Resource)
	msg := sprintf("%s %s allows %q on Resource \"*\": name the actions and the resources the statement needs", [r.type, r.logical_id, action])
}

documents(r) := [r.properties.PolicyDocument] if r.type in {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"}

documents(r) := [p.PolicyDocument | some p in r.properties.Policies] if r.type in {"AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"}

as_array(x) := x if is_array(x)

as_array(x) := [x] if not is_array(x)
