#!/usr/bin/env python3
"""Generates spec.txt, cairn's compact CloudFormation resource specification.

Run by `make spec`. The source is the CloudFormation resource provider schemas that cfn-lint
ships (AWS's published registry schemas, with cfn-lint's patches; MIT No Attribution), for
us-east-1, the region cfn-lint checks by default. The output keeps what cairn checks: per
resource type its properties and their shapes (scalar, list, map, object, anything), the
required properties, and the attributes Fn::GetAtt may name; plus the Lambda runtimes and
their deprecation dates.

Format (one record a line, so the Go side indexes it without decoding it all):
  V <cfn-lint version>
  S <json>            shape number N is the N-th S line:
                        "s" "i" "n" "b"   string, integer, number, boolean
                        "a"               anything (unions, free-form JSON)
                        ["l", item]       list
                        ["m", value]      map with free keys
                        ["o", {name: shape}, [required], closed]  object
  T <type> <json>     {"s": top object shape, "a": [attributes], "l": [list attributes]}; an
                        attribute with * or \\ is a regular expression; "l" (left out when
                        empty) names the attributes whose values are lists; "n" the property
                        naming the resource when the template may set its identifier
  R <runtime> <json>  {"deprecated": date, "successor": runtime}
"""

import json
import sys

import cfnlint
from cfnlint.version import __version__ as cfnlint_version
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER as manager

REGION = "us-east-1"

shapes = []  # canonical json strings
by_canon = {}


def intern(shape):
    canon = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    if canon not in by_canon:
        by_canon[canon] = len(shapes)
        shapes.append(canon)
    return by_canon[canon]


SCALARS = {"string": "s", "integer": "i", "number": "n", "boolean": "b"}


class Converter:
    def __init__(self, schema):
        self.schema = schema
        self.defs = {}  # definition name -> shape id
        self.busy = set()

    def ref(self, ref):
        if not ref.startswith("#/definitions/"):
            return intern("a")
        name = ref[len("#/definitions/"):]
        if name in self.defs:
            return self.defs[name]
        if name in self.busy:
            # A recursive definition (e.g. WAFv2 statements): checked no deeper.
            return intern("a")
        self.busy.add(name)
        d = self.schema.get("definitions", {}).get(name, {})
        sid = self.convert(d)
        self.busy.discard(name)
        self.defs[name] = sid
        return sid

    def convert(self, node):
        if not isinstance(node, dict):
            return intern("a")
        if "$ref" in node:
            merged = dict(node)
            del merged["$ref"]
            if not any(k in merged for k in ("type", "properties", "items")):
                return self.ref(node["$ref"])
            target = self.schema.get("definitions", {}).get(node["$ref"].split("/")[-1], {})
            merged = {**target, **merged}
            return self.convert(merged)
        typ = node.get("type")
        if isinstance(typ, list):
            typ = typ[0] if len(typ) == 1 else None
            if typ is None:
                return intern("a")
        branches = [b for k in ("oneOf", "anyOf", "allOf") for b in node.get(k, []) if isinstance(b, dict)]
        if typ is None:
            if "properties" in node or any("properties" in b for b in branches):
                typ = "object"
            elif "items" in node:
                typ = "array"
            else:
                kinds = {self.kind_of(b) for b in branches}
                if len(kinds) == 1 and None not in kinds:
                    typ = kinds.pop()
                else:
                    return intern("a")
        if typ in SCALARS:
            return intern(SCALARS[typ])
        if typ == "array":
            items = node.get("items")
            if isinstance(items, dict):
                return intern(["l", self.convert(items)])
            return intern(["l", intern("a")])
        if typ == "object":
            props = {}
            for src in [node] + branches:
                for k, v in src.get("properties", {}).items():
                    if k not in props:
                        props[k] = self.convert(v)
            open_keys = node.get("additionalProperties", True) is not False or "patternProperties" in node
            for b in branches:
                if b.get("additionalProperties", False) is not False or "patternProperties" in b:
                    open_keys = True
            if not props:
                if "patternProperties" in node:
                    pats = list(node["patternProperties"].values())
                    value = self.convert(pats[0]) if len(pats) == 1 else intern("a")
                    return intern(["m", value])
                if isinstance(node.get("additionalProperties"), dict):
                    return intern(["m", self.convert(node["additionalProperties"])])
                if open_keys:
                    return intern(["m", intern("a")])
            required = sorted(r for r in node.get("required", []) if isinstance(r, str))
            return intern(["o", props, required, 0 if open_keys else 1])
        return intern("a")

    def kind_of(self, node):
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            node = self.schema.get("definitions", {}).get(name, {})
        t = node.get("type")
        if isinstance(t, str):
            return t
        return None


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


def main():
    out = [f"V {cfnlint_version}"]
    types = []
    for t in sorted(manager.get_resource_types(REGION)):
        s = manager.get_resource_schema(REGION, t)
        conv = Converter(s.schema)
        top = dict(s.schema)
        top["type"] = "object"
        sid = conv.convert(top)
        atts = sorted(s.get_atts.keys())
        rec = {"s": sid, "a": atts}
        lists = sorted(a for a, ptr in s.get_atts.items() if pointed_type(s.schema, ptr) == "array")
        if lists:
            rec["l"] = lists
        ident = s.schema.get("primaryIdentifier", [])
        read_only = set(s.schema.get("readOnlyProperties", []))
        if len(ident) == 1 and ident[0] not in read_only and ident[0].count("/") == 2:
            rec["n"] = ident[0].split("/")[-1]
        types.append(f"T {t} " + json.dumps(rec, separators=(",", ":")))
    out += ["S " + c for c in shapes]
    out += types
    lifecycle = json.load(open(cfnlint.__path__[0] + "/data/AdditionalSpecs/LmbdRuntimeLifecycle.json"))
    for rt in sorted(lifecycle):
        v = lifecycle[rt]
        out.append(f"R {rt} " + json.dumps({"deprecated": v.get("deprecated", ""), "successor": v.get("successor", "")}, separators=(",", ":")))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
