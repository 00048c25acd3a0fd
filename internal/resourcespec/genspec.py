#!/usr/bin/env python3
"""Generates spec.txt, cairn's compact CloudFormation resource specification.

Run by `make spec`. The source is the CloudFormation resource provider schemas that cfn-lint
ships (AWS's published registry schemas, with cfn-lint's patches applied: the corrections in
cfnlint/data/schemas/patches/providers/all/<type>/*.json for schemas known to be wrong, such
as case-insensitive enums, and the `format`s of cfnlint/data/schemas/patches/extensions;
MIT No Attribution), for us-east-1, the region cfn-lint checks by default. The output keeps
what cairn checks: per resource type its properties and the JSON Schema keywords of their
values, the required properties and the combinations of them, and the attributes
Fn::GetAtt may name; plus the Lambda runtimes and their lifecycle dates.

Format (one record a line, so the Go side indexes it without decoding it all):
  V <cfn-lint version>
  S <json>            shape number N is the N-th S line: "s" "i" "n" "b" (a string,
                        integer, number or boolean without constraints), "x" (any single
                        value), "a" (anything: unions, free-form JSON), or an object whose
                        keys say the kind: a list has "it", a map "mv", an object "pr", a
                        single value "k" (s i n b x; s when left out):
                        k     kind of a single value, or "a" for anything whose single
                              values meet the constraints
                        e     enum, values as strings; E the same, compared case-insensitively
                        p     pattern (searched, as JSON Schema does); f format (see spec.go)
                        L     [minLength, maxLength]; N [minimum, maximum, exclusiveMinimum,
                              exclusiveMaximum]; I [minItems, maxItems]; P [minProperties,
                              maxProperties] (null where unset)
                        u     1: uniqueItems
                        it    shape of a list's items; mv of a map's values
                        pr    {property: shape}; rq required properties; c 1: no other keys
                        pp    [[key pattern, shape], ...] (patternProperties)
                        q     [requirement, ...], each of: [names] (all present),
                              {"1": [req, ...]} exactly one holds (oneOf), {"+": [...]} at
                              least one (anyOf), {"&": [...]} all (allOf), {"r": [names],
                              "k": [allowed keys]} names present and no other key
                        xor   exactly one of these properties (requiredXor); or at least one
                        dr    {property: [properties it requires]} (dependentRequired)
                        dx    {property: [properties it excludes]} (dependentExcluded)
                        alt   [shape, ...]: a single value must meet one of them (anyOf or
                              oneOf of scalar schemas: patterns, formats, enums)
  T <type> <json>     {"s": top object shape, "a": [attributes], "l": [list attributes]}; an
                        attribute with * or \\ is a regular expression; "l" (left out when
                        empty) names the attributes whose values are lists; "k" those whose
                        values are integers (i), numbers (n) or booleans (b); "n" the property
                        naming the resource when the template may set its identifier; "lc"
                        [status, date] the service's lifecycle (cfn-lint's E3710, W3696,
                        W3697: shutdown, sunset or maintenance, from AWS's list of
                        services shut down), left out for a service in service
  R <runtime> <json>  {"deprecated": date, "create": date creation is blocked, "update":
                        date updates are blocked, "successor": runtime}
"""

import json
import sys

import cfnlint
from cfnlint.version import __version__ as cfnlint_version
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER as manager

REGION = "us-east-1"

shapes = []  # canonical json strings
by_canon = {}


# RUNTIME_SCHEDULE is AWS's Lambda runtime schedule where it has moved since the installed
# cfn-lint's table (LmbdRuntimeLifecycle.json) was written: runtime -> (deprecated, creation
# blocked, update blocked, successor), dates in UTC. The source is the "Supported runtimes"
# and "Deprecated runtimes" tables of
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html, checked 2026-12-01:
# AWS moved the blocks of most Amazon Linux 2 runtimes to 2027-02-01 (create) and
# 2027-03-03 (update), and those of java8.al2, java11, java17 and python3.11 a year on, and
# dotnet10 and ruby4.0 are the newest of their languages. cfn-lint 1.51 has the older dates
# (cfn-lint took these in June 2026, after 1.51), which would have cairn refuse templates
# AWS deploys. An entry the installed cfn-lint agrees with can go.
RUNTIME_SCHEDULE = {
    "dotnetcore1.0": ("2019-06-27", "2019-06-30", "2019-07-30", "dotnet10"),
    "dotnetcore2.0": ("2019-05-30", "2019-04-30", "2019-05-30", "dotnet10"),
    "dotnetcore2.1": ("2022-01-05", "2022-01-05", "2022-04-13", "dotnet10"),
    "dotnetcore3.1": ("2023-04-03", "2023-04-03", "2023-05-03", "dotnet10"),
    "dotnet6": ("2024-12-20", "2027-02-01", "2027-03-03", "dotnet10"),
    "dotnet8": ("2026-11-10", "2027-02-01", "2027-03-03", "dotnet10"),
    "dotnet9": ("2026-11-10", None, None, "dotnet10"),
    "dotnet10": ("2028-11-14", "2028-12-14", "2029-01-15", None),
    "go1.x": ("2024-01-08", "2024-02-08", "2027-03-03", "provided.al2023"),
    "java8": ("2024-01-08", "2024-02-08", "2027-03-03", "java25"),
    "java8.al2": ("2027-06-30", "2027-07-31", "2027-08-31", "java25"),
    "java11": ("2027-06-30", "2027-07-31", "2027-08-31", "java25"),
    "java17": ("2027-06-30", "2027-07-31", "2027-08-31", "java25"),
    "nodejs14.x": ("2023-12-04", "2024-01-09", "2027-03-03", "nodejs24.x"),
    "nodejs16.x": ("2024-06-12", "2027-02-01", "2027-03-03", "nodejs24.x"),
    "nodejs18.x": ("2025-09-01", "2027-02-01", "2027-03-03", "nodejs24.x"),
    "nodejs20.x": ("2026-04-30", "2027-02-01", "2027-03-03", "nodejs24.x"),
    "provided": ("2024-01-08", "2024-02-08", "2027-03-03", "provided.al2023"),
    "provided.al2": ("2026-07-31", "2027-02-01", "2027-03-03", "provided.al2023"),
    "python3.7": ("2023-12-04", "2024-01-09", "2027-03-03", "python3.14"),
    "python3.8": ("2024-10-14", "2027-02-01", "2027-03-03", "python3.14"),
    "python3.9": ("2025-12-15", "2027-02-01", "2027-03-03", "python3.14"),
    "python3.10": ("2026-10-31", "2027-02-01", "2027-03-03", "python3.14"),
    "python3.11": ("2027-06-30", "2027-07-31", "2027-08-31", "python3.14"),
    "ruby2.5": ("2021-07-30", "2021-07-30", "2022-03-31", "ruby4.0"),
    "ruby2.7": ("2023-12-07", "2024-01-09", "2027-03-03", "ruby4.0"),
    "ruby3.2": ("2026-03-31", "2027-02-01", "2027-03-03", "ruby4.0"),
    "ruby3.3": ("2027-03-31", "2027-04-30", "2027-05-31", "ruby4.0"),
    "ruby3.4": ("2028-03-31", "2028-04-30", "2028-05-31", "ruby4.0"),
    "ruby4.0": ("2029-03-31", "2029-04-30", "2029-05-31", None),
}


def intern(shape):
    canon = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    if canon not in by_canon:
        by_canon[canon] = len(shapes)
        shapes.append(canon)
    return by_canon[canon]


SCALARS = {"string": "s", "integer": "i", "number": "n", "boolean": "b"}

# Formats cairn checks (spec.go has their patterns): AWS refuses a malformed identifier,
# ARN or network at deploy time. cfn-lint's other formats (date-time, json, int64, ...)
# are left out.
FORMATS = {
    "AWS::EC2::VPC.Id", "AWS::EC2::Subnet.Id", "AWS::EC2::SecurityGroup.Id",
    "AWS::EC2::Image.Id", "AWS::IAM::Role.Arn", "AWS::KMS::Key.Arn", "AWS::KMS::Key.Id",
    "AWS::KMS::Alias.AliasName", "AWS::SNS::Topic.Arn", "AWS::Lambda::Function.Arn",
    "AWS::ACM::Certificate.Arn", "AWS::Logs::LogGroup.Name", "AWS::S3::Bucket.Name",
    "ipv4-network", "ipv6-network",
}

# Patterns every string matches: left out.
ANYTHING = {".*", "^.*$", "(?s).*", "[\\s\\S]*", "^[\\s\\S]*$", "^[\\S\\s]*$", "(?s)^.*$"}

# Keys of a schema node that say nothing cairn checks.
NOISE = {"description", "title", "$comment", "examples", "default", "insertionOrder",
         "relationshipRef", "arrayType", "markdownDescription", "deprecated", "readOnly",
         "writeOnly", "const_comment", "uniqueKeys", "maxUniqueItems", "propertyNames",
         "$schema", "$id", "documentationUrl", "sourceUrl"}


def canon_value(v):
    """An enum or const value as cairn compares it: the text CloudFormation would see."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return v
    return None


class Converter:
    def __init__(self, schema):
        self.schema = schema
        self.defs = {}  # definition name -> shape id
        self.busy = set()

    def definition(self, ref):
        if not isinstance(ref, str) or not ref.startswith("#/definitions/"):
            return None
        return self.schema.get("definitions", {}).get(ref[len("#/definitions/"):])

    def deref(self, node):
        """node with a $ref merged in (the node's own keys win), or None for a loop."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 20:
            target = self.definition(node["$ref"])
            if target is None:
                rest = dict(node)
                del rest["$ref"]
                return rest
            rest = dict(node)
            del rest["$ref"]
            node = {**target, **rest}
            seen += 1
        return node

    def ref(self, ref, extra):
        """The shape of a $ref, decoded once per definition (extra keys are merged)."""
        name = ref[len("#/definitions/"):] if isinstance(ref, str) and ref.startswith("#/definitions/") else None
        if name is None or name not in self.schema.get("definitions", {}):
            return intern("a")
        if not extra:
            if name in self.defs:
                return self.defs[name]
            if name in self.busy:
                # A recursive definition (e.g. WAFv2 statements): checked no deeper.
                return intern("a")
            self.busy.add(name)
            sid = self.convert(self.schema["definitions"][name], top=False)
            self.busy.discard(name)
            self.defs[name] = sid
            return sid
        if name in self.busy:
            return intern("a")
        self.busy.add(name)
        sid = self.convert({**self.schema["definitions"][name], **extra}, top=False)
        self.busy.discard(name)
        return sid

    def convert(self, node, top=False):
        if not isinstance(node, dict):
            return intern("a")
        if "$ref" in node:
            extra = {k: v for k, v in node.items() if k != "$ref" and k not in NOISE}
            return self.ref(node["$ref"], extra)
        node = self.merge_all_of(node)
        typ = node.get("type")
        if isinstance(typ, list):
            kinds = set(typ)
            if len(kinds) == 1:
                typ = typ[0]
            elif kinds <= set(SCALARS):
                return self.scalar(node, "x")
            else:
                return self.scalar(node, "a")  # a single value meets the constraints
        branches = [self.deref(b) for k in ("oneOf", "anyOf") for b in node.get(k, []) if isinstance(b, dict)]
        if typ is None:
            if "properties" in node or "patternProperties" in node or any(
                    isinstance(b, dict) and ("properties" in b or b.get("type") == "object") for b in branches):
                typ = "object"
            elif "items" in node:
                typ = "array"
            else:
                kinds = {self.kind_of(b) for b in branches}
                if len(kinds) == 1 and None not in kinds:
                    typ = kinds.pop()
                elif kinds and kinds <= set(SCALARS) | {"scalar"}:
                    return self.scalar(node, "x")
                else:
                    # No type: anything, and a single value meets the constraints (a
                    # policy document given as a JSON string, say).
                    return self.scalar(node, "a")
        if typ in SCALARS:
            return self.scalar(node, SCALARS[typ])
        if typ == "array":
            return self.array(node)
        if typ == "object":
            return self.obj(node, top)
        return intern("a")

    def merge_all_of(self, node):
        """node with its allOf branches merged in: each must hold, so their keywords add up."""
        if "allOf" not in node or not isinstance(node["allOf"], list):
            return node
        out = {k: v for k, v in node.items() if k != "allOf"}
        reqs = list(out.get("required", []))
        props = dict(out.get("properties", {}))
        extra_q = list(out.get("_q", []))
        for b in node["allOf"]:
            b = self.deref(b)
            if not isinstance(b, dict):
                continue
            b = self.merge_all_of(b)
            for k, v in b.items():
                if k in NOISE:
                    continue
                if k == "required":
                    reqs += [r for r in v if r not in reqs]
                elif k == "properties":
                    for pk, pv in v.items():
                        props.setdefault(pk, pv)
                elif k in ("oneOf", "anyOf"):
                    extra_q.append((k, v))
                elif k not in out:
                    out[k] = v
        if reqs:
            out["required"] = reqs
        if props:
            out["properties"] = props
        if extra_q:
            out["_q"] = extra_q
        return out

    def kind_of(self, node):
        node = self.deref(node)
        if not isinstance(node, dict):
            return None
        t = node.get("type")
        if isinstance(t, str):
            return t
        if isinstance(t, list) and set(t) <= set(SCALARS):
            return "scalar"
        keys = set(node) - NOISE
        if keys and keys <= {"pattern", "format", "enum", "enumCaseInsensitive", "minLength", "maxLength", "const"}:
            return "scalar"
        return None

    def scalar_constraints(self, node, out):
        enum = node.get("enum")
        if "const" in node:
            enum = [node["const"]]
        if isinstance(enum, list):
            vals = [canon_value(v) for v in enum]
            if None not in vals:
                out["e"] = vals
        eci = node.get("enumCaseInsensitive")
        if isinstance(eci, list):
            vals = [canon_value(v) for v in eci]
            if None not in vals:
                out["E"] = vals
        if isinstance(node.get("pattern"), str) and node["pattern"] not in ANYTHING and "e" not in out:
            out["p"] = node["pattern"]  # (an enum says more than a pattern)
        if node.get("format") in FORMATS:
            out["f"] = node["format"]
        lo, hi = node.get("minLength"), node.get("maxLength")
        if isinstance(lo, int) or isinstance(hi, int):
            out["L"] = [lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None]
        nums = [node.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
        nums = [v if isinstance(v, (int, float)) and not isinstance(v, bool) else None for v in nums]
        if any(v is not None for v in nums):
            out["N"] = nums

    def scalar(self, node, kind):
        out = {}
        self.scalar_constraints(node, out)
        alts = self.scalar_alternatives(node)
        if alts:
            out["alt"] = alts
        if not out:
            return intern(kind)
        if kind != "s":
            out["k"] = kind
        return intern(out)

    def scalar_alternatives(self, node):
        """anyOf/oneOf of scalar schemas (patterns, formats, enums): a value meets one."""
        for k in ("anyOf", "oneOf"):
            bs = node.get(k)
            if not isinstance(bs, list) or not bs:
                continue
            alts = []
            for b in bs:
                b = self.deref(b)
                if not isinstance(b, dict):
                    return []
                c = {"k": "x"}
                self.scalar_constraints(b, c)
                if len(c) == 1:
                    return []  # an unconstrained branch: anything goes
                alts.append(intern(c))
            return alts
        return []

    def array(self, node):
        items = node.get("items")
        out = {"it": self.convert(items) if isinstance(items, dict) else intern("a")}
        lo, hi = node.get("minItems"), node.get("maxItems")
        if isinstance(lo, int) or isinstance(hi, int):
            out["I"] = [lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None]
        if node.get("uniqueItems") is True:
            out["u"] = 1
        return intern(out)

    def requirement(self, b):
        """A oneOf/anyOf branch as a requirement on the keys present, or None when the
        branch constrains more than keys (it is then merged into the properties)."""
        b = self.deref(b)
        if not isinstance(b, dict):
            return None
        b = self.merge_all_of(b)
        keys = set(b) - NOISE - {"type"}
        if b.get("type") not in (None, "object"):
            return None
        req = [r for r in b.get("required", []) if isinstance(r, str)]
        parts = []
        for k in ("oneOf", "anyOf"):
            if k in b:
                sub = [self.requirement(x) for x in b[k]]
                if None in sub:
                    return None
                parts.append({"1" if k == "oneOf" else "+": sub})
        for k, v in b.get("_q", []):
            sub = [self.requirement(x) for x in v]
            if None in sub:
                return None
            parts.append({"1" if k == "oneOf" else "+": sub})
        if keys <= {"required", "oneOf", "anyOf", "_q"}:
            if not parts:
                return req
            if req:
                parts.insert(0, req)
            return parts[0] if len(parts) == 1 else {"&": parts}
        if keys <= {"required", "properties", "additionalProperties", "oneOf", "anyOf", "_q", "patternProperties"}:
            r = {"r": req}
            if b.get("additionalProperties") is False and "patternProperties" not in b:
                r["k"] = sorted(b.get("properties", {}))
            if not parts:
                return r
            return {"&": [r] + parts}
        return None

    def obj(self, node, top):
        props = {}
        branch_sets = []  # (keyword, [branch])
        for k in ("oneOf", "anyOf"):
            if isinstance(node.get(k), list):
                branch_sets.append((k, node[k]))
        branch_sets += node.get("_q", [])
        open_keys = node.get("additionalProperties", True) is not False or "patternProperties" in node
        q = []
        for kw, bs in branch_sets:
            reqs = [self.requirement(b) for b in bs]
            for b in bs:
                b = self.deref(b)
                if not isinstance(b, dict):
                    continue
                b = self.merge_all_of(b)
                for pk, pv in b.get("properties", {}).items():
                    if pk not in props and pk not in node.get("properties", {}):
                        props[pk] = pv
                if b.get("additionalProperties", False) is not False or "patternProperties" in b:
                    if "properties" in b:
                        open_keys = True
            if None not in reqs and reqs:
                q.append({"1" if kw == "oneOf" else "+": reqs})
        shape_props = {}
        for k, v in list(node.get("properties", {}).items()) + list(props.items()):
            if k not in shape_props:
                shape_props[k] = self.convert(v)
        out = {}
        pats = node.get("patternProperties")
        if not shape_props and not q and "required" not in node:
            if isinstance(pats, dict) and pats:
                vals = list(pats.values())
                m = {"mv": self.convert(vals[0]) if len(vals) == 1 else intern("a")}
                if len(pats) == 1 and node.get("additionalProperties") is False:
                    m["pp"] = [[list(pats)[0], m["mv"]]]
                self.props_count(node, m)
                return intern(m)
            if isinstance(node.get("additionalProperties"), dict):
                m = {"mv": self.convert(node["additionalProperties"])}
                self.props_count(node, m)
                return intern(m)
            if open_keys and not top:
                m = {"mv": intern("a")}
                self.props_count(node, m)
                return intern(m)
        out["pr"] = shape_props
        req = sorted(r for r in node.get("required", []) if isinstance(r, str))
        if req:
            out["rq"] = req
        if not open_keys:
            out["c"] = 1
        if isinstance(pats, dict) and pats and shape_props:
            out["pp"] = [[p, self.convert(s)] for p, s in sorted(pats.items())]
            out.pop("c", None)
        if q:
            out["q"] = q
        for key, kw in (("xor", "requiredXor"), ("or", "requiredOr")):
            v = node.get(kw)
            if isinstance(v, list) and v:
                out[key] = v
        dr = {}
        for kw in ("dependentRequired", "dependencies"):
            for k, v in (node.get(kw) or {}).items():
                if isinstance(v, list) and all(isinstance(x, str) for x in v):
                    dr.setdefault(k, [])
                    dr[k] += [x for x in v if x not in dr[k]]
        if dr:
            out["dr"] = dr
        dx = {k: v for k, v in (node.get("dependentExcluded") or {}).items() if isinstance(v, list)}
        if dx:
            out["dx"] = dx
        self.props_count(node, out)
        return intern(out)

    def props_count(self, node, out):
        lo, hi = node.get("minProperties"), node.get("maxProperties")
        if isinstance(lo, int) or isinstance(hi, int):
            out["P"] = [lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None]


EXTENSIONS = cfnlint.__path__[0] + "/data/schemas/extensions"


def extension_enums(type_name):
    """Enums cfn-lint's extension schemas set on a top-level property unconditionally (an
    allOf item "if the property is given, then it is one of ...", as for RDS and
    ElastiCache engines, whose lists come from AWS's APIs), compared case-insensitively as
    AWS compares them (cfn-lint lowercases the engine first). The conditional ones (engine
    versions per engine, instance classes per region) are cfn-lint's own rules: left out."""
    import glob
    import os
    out = {}
    folder = os.path.join(EXTENSIONS, type_name.lower().replace("::", "_"))
    for f in sorted(glob.glob(folder + "/*.json")):
        try:
            doc = json.load(open(f))
        except (OSError, ValueError):
            continue
        for item in doc.get("allOf", [doc]) if isinstance(doc, dict) else []:
            cond, then = item.get("if"), item.get("then") if isinstance(item, dict) else None
            if not isinstance(cond, dict) or not isinstance(then, dict) or set(cond) - {"properties", "required", "type"}:
                continue
            props = cond.get("properties", {})
            if not all(isinstance(v, dict) and set(v) <= {"type"} for v in props.values()):
                continue
            tp = then.get("properties", {})
            if set(then) - {"properties", "type"} or len(tp) != 1:
                continue
            (name, rule), = tp.items()
            if name in cond.get("required", []) and isinstance(rule, dict) and set(rule) == {"enum"}:
                out[name] = rule["enum"]
    return out


def pointed_type(schema, pointer):
    """The JSON type of the schema node a GetAtt's pointer (/properties/A/B) names."""
    node = schema
    for part in pointer.strip("/").split("/"):
        if not isinstance(node, dict):
            return None
        while "$ref" in node and node["$ref"].startswith("#/definitions/"):
            node = schema.get("definitions", {}).get(node["$ref"].split("/")[-1], {})
        node = node.get(part)
        if node is None:
            return None
    while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/definitions/"):
        node = schema.get("definitions", {}).get(node["$ref"].split("/")[-1], {})
    t = node.get("type") if isinstance(node, dict) else None
    return t if isinstance(t, str) else None


def renumber(types):
    """Orders the shapes by kind and text, which puts alike ones together for gzip (a
    fifth smaller than in the order they were met), and renumbers their references."""
    decoded = [json.loads(c) for c in shapes]

    def key(i):
        s = decoded[i]
        if isinstance(s, str):
            return (0, s)
        kind = 3 if "pr" in s else 1 if "it" in s else 2 if "mv" in s else 0
        return (1 + kind, shapes[i])

    order = sorted(range(len(shapes)), key=key)
    new = {old: i for i, old in enumerate(order)}

    def remap(s):
        if isinstance(s, str):
            return s
        s = dict(s)
        for k in ("it", "mv"):
            if k in s:
                s[k] = new[s[k]]
        if "pr" in s:
            s["pr"] = {k: new[v] for k, v in s["pr"].items()}
        if "pp" in s:
            s["pp"] = [[p, new[v]] for p, v in s["pp"]]
        if "alt" in s:
            s["alt"] = [new[v] for v in s["alt"]]
        return s

    lines = ["S " + json.dumps(remap(decoded[o]), sort_keys=True, separators=(",", ":")) for o in order]
    for t in types:
        t["rec"]["s"] = new[t["rec"]["s"]]
    return lines


def main():
    out = [f"V {cfnlint_version}"]
    types = []
    for t in sorted(manager.get_resource_types(REGION)):
        s = manager.get_resource_schema(REGION, t)
        top = dict(s.schema)
        top["type"] = "object"
        enums = extension_enums(t)
        if enums:
            top["properties"] = dict(top.get("properties", {}))
            for name, values in enums.items():
                if isinstance(top["properties"].get(name), dict) and "enum" not in top["properties"][name]:
                    top["properties"][name] = {**top["properties"][name], "enumCaseInsensitive": values}
        conv = Converter(top)
        sid = conv.convert(top, top=True)
        atts = sorted(s.get_atts.keys())
        rec = {"s": sid, "a": atts}
        lists = sorted(a for a, ptr in s.get_atts.items() if pointed_type(s.schema, ptr) == "array")
        if lists:
            rec["l"] = lists
        # attributes whose values are numbers or booleans, not text: CloudFormation refuses
        # them where text goes (an output's Value, Fn::Sub, Fn::Join). DocDB's Port is an
        # integer property but its attribute is text (cfn-lint's GetAtt rule says so too).
        kinds = {a: k[0] for a, ptr in s.get_atts.items()
                 if (k := pointed_type(s.schema, ptr)) in ("integer", "number", "boolean")
                 and (t, a) != ("AWS::DocDB::DBCluster", "Port")}
        if kinds:
            rec["k"] = dict(sorted(kinds.items()))
        ident = s.schema.get("primaryIdentifier", [])
        read_only = set(s.schema.get("readOnlyProperties", []))
        if len(ident) == 1 and ident[0] not in read_only and ident[0].count("/") == 2:
            rec["n"] = ident[0].split("/")[-1]
        lc = s.schema.get("lifecycle")
        if isinstance(lc, dict) and lc.get("status"):
            rec["lc"] = [lc["status"], lc.get("date", "")]
        types.append({"name": t, "rec": rec})
    out += renumber(types)
    out += [f"T {t['name']} " + json.dumps(t["rec"], separators=(",", ":")) for t in types]
    lifecycle = json.load(open(cfnlint.__path__[0] + "/data/AdditionalSpecs/LmbdRuntimeLifecycle.json"))
    for rt, (deprecated, create, update, successor) in RUNTIME_SCHEDULE.items():
        lifecycle[rt] = {"deprecated": deprecated, "create-block": create, "update-block": update, "successor": successor}
    for rt in sorted(lifecycle):
        v = lifecycle[rt]
        rec = {"deprecated": v.get("deprecated") or "", "create": v.get("create-block") or "",
               "update": v.get("update-block") or "", "successor": v.get("successor") or ""}
        out.append(f"R {rt} " + json.dumps(rec, separators=(",", ":")))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
