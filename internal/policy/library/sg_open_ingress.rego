# METADATA
# title: No security group open to the internet but on 80 and 443
# description: >-
#   Denies an ingress rule (of an AWS::EC2::SecurityGroup or an
#   AWS::EC2::SecurityGroupIngress) from 0.0.0.0/0 or ::/0 unless it opens exactly TCP
#   port 80 or 443.
package cairn.sg_open_ingress

web_ports := {80, 443}

deny contains {"msg": msg, "stack": s.name, "resource": r.logical_id} if {
	some s in input.stacks
	some r in s.resources
	some rule in ingress(r)
	some cidr in open_cidrs(rule)
	not web_only(rule)
	msg := sprintf("%s %s opens %s to %s: only TCP 80 and 443 may be open to the internet; reach other ports through a load balancer, a VPN or a named CIDR", [r.type, r.logical_id, ports(rule), cidr])
}

ingress(r) := object.get(r, ["properties", "SecurityGroupIngress"], []) if r.type == "AWS::EC2::SecurityGroup"

ingress(r) := [r.properties] if r.type == "AWS::EC2::SecurityGroupIngress"

open_cidrs(rule) := {c | some c in [object.get(rule, "CidrIp", ""), object.get(rule, "CidrIpv6", "")]; c in {"0.0.0.0/0", "::/0"}}

web_only(rule) if {
	lower(sprintf("%v", [rule.IpProtocol])) in {"tcp", "6"}
	to_number(rule.FromPort) == to_number(rule.ToPort)
	to_number(rule.FromPort) in web_ports
}

ports(rule) := "every port" if sprintf("%v", [rule.IpProtocol]) == "-1"

ports(rule) := sprintf("%v ports %v-%v", [rule.IpProtocol, rule.FromPort, rule.ToPort]) if sprintf("%v", [rule.IpProtocol]) != "-1"
