package cairn.kms_rotation_test

import data.cairn.kms_rotation

key(props) := {"stacks": [{"name": "keys", "resources": [{"logical_id": "Key", "type": "AWS::KMS::Key", "properties": props}]}]}

test_key_without_rotation_denied if {
	count(kms_rotation.deny) == 1 with input as key({"KeyPolicy": {}})
}

test_rotating_key_allowed if {
	count(kms_rotation.deny) == 0 with input as key({"EnableKeyRotation": true})
	count(kms_rotation.deny) == 0 with input as key({"EnableKeyRotation": "true"})
}

test_asymmetric_key_not_judged if {
	count(kms_rotation.deny) == 0 with input as key({"KeySpec": "RSA_2048"})
}
