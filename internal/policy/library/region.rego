# METADATA
# title: Stacks only in allowed regions
# description: >-
#   Denies a stack whose region is not in data.config.allowed_regions (no list: no
#   denial). A stack without a region of its own lives in cairn's region: name it as
#   data.config.home_region, or it is not judged.
package cairn.region

deny contains {"msg": msg, "stack": s.name} if {
	allowed := data.config.allowed_regions
	count(allowed) > 0
	some s in input.stacks
	not s.action in {"delete", "drop", "disabled"}
	r := region(s)
	not r in allowed
	msg := sprintf("stack %s is in region %s, outside the allowed regions %v: move it to one of them (region: in cairn.yaml), or ask the platform team to allow %s", [s.name, r, allowed, r])
}

region(s) := s.region if s.region != ""

region(s) := data.config.home_region if {
	object.get(s, "region", "") == ""
	data.config.home_region
}
