package cairn.sg_open_ingress_test

import data.cairn.sg_open_ingress

group(rules) := {"stacks": [{"name": "net", "resources": [{"logical_id": "Sg", "type": "AWS::EC2::SecurityGroup", "properties": {"SecurityGroupIngress": rules}}]}]}

test_ssh_from_anywhere_denied if {
	some d in sg_open_ingress.deny with input as group([{"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "0.0.0.0/0"}])
	d.resource == "Sg"
	contains(d.msg, "22")
}

test_all_traffic_ipv6_denied if {
	count(sg_open_ingress.deny) == 1 with input as group([{"IpProtocol": "-1", "CidrIpv6": "::/0"}])
}

test_port_range_including_443_denied if {
	count(sg_open_ingress.deny) == 1 with input as group([{"IpProtocol": "tcp", "FromPort": 0, "ToPort": 1024, "CidrIp": "0.0.0.0/0"}])
}

test_https_from_anywhere_allowed if {
	count(sg_open_ingress.deny) == 0 with input as group([
		{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"},
		{"IpProtocol": "tcp", "FromPort": "80", "ToPort": "80", "CidrIpv6": "::/0"},
	])
}

test_ssh_from_office_allowed if {
	count(sg_open_ingress.deny) == 0 with input as group([{"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "203.0.113.0/24"}])
}

test_standalone_ingress_denied if {
	count(sg_open_ingress.deny) == 1 with input as {"stacks": [{"name": "net", "resources": [{"logical_id": "In", "type": "AWS::EC2::SecurityGroupIngress", "properties": {"IpProtocol": "tcp", "FromPort": 5432, "ToPort": 5432, "CidrIp": "0.0.0.0/0"}}]}]}
}
