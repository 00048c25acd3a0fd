#!/usr/bin/env python3
"""Generates translator.json, the data cairn's Serverless transform takes from AWS's SAM
translator: its policy templates, the ARNs of the AWS managed policies it knows by name, and
the connector profiles (what AWS::Serverless::Connector grants between two resource types),
and the properties of each Serverless resource type with the kinds of value it takes.

Run by `make sam-data`, from the installed aws-sam-translator (pip install
aws-sam-translator). The data is the translator's own (samtranslator/policy_templates_data/
policy_templates.json, samtranslator/internal/data/aws_managed_policies.json and
samtranslator/model/connector_profiles/profiles.json), from
https://github.com/aws/serverless-application-model, Copyright Amazon.com, Inc. or its
affiliates, licensed under the Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0); it is copied here unchanged in content, only
reshaped: per policy template its parameter names and its definition; managed policies of
the aws partition by name, with the ARN's path after arn:aws:iam::aws:policy/.
"""

import gzip
import json
import os
import sys

import samtranslator

ROOT = os.path.dirname(samtranslator.__file__)


def resource_properties():
    """Per Serverless resource type, the properties the translator takes (an other is refused:
    "property X not defined for resource of type T"), each with the kinds of value its
    validator accepts, found by trying values of each (s string, i integer, f float, b boolean,
    m mapping, l list), and whether it takes an intrinsic function without judging it ("x")."""
    import inspect
    from samtranslator.model import sam_resources

    samples = [("s", "x"), ("i", 1), ("f", 1.5), ("b", True), ("m", {}), ("m", {"k": "v"}), ("l", []), ("l", ["x"])]
    out = {}
    for _, cls in inspect.getmembers(sam_resources, inspect.isclass):
        rt = cls.__dict__.get("resource_type")
        if not isinstance(rt, str) or not rt.startswith("AWS::Serverless::"):
            continue
        props = {}
        for name, ptype in sorted(cls.property_types.items()):
            if name.startswith("__"):
                continue  # the translator's own (__MANAGE_SWAGGER)
            kinds = ""
            for label, v in samples:
                try:
                    ok = ptype.validate(v, should_raise=False)
                except Exception:
                    ok = False
                if ok and label not in kinds:
                    kinds += label
            props[name] = {"k": kinds, "x": bool(ptype.supports_intrinsics)}
        out[rt] = {"properties": props, "closed": bool(getattr(cls, "validate_setattr", True))}
    return out


def main():
    with open(os.path.join(ROOT, "policy_templates_data", "policy_templates.json")) as f:
        templates = json.load(f)["Templates"]
    with open(os.path.join(ROOT, "internal", "data", "aws_managed_policies.json")) as f:
        managed = json.load(f)["aws"]
    with open(os.path.join(ROOT, "model", "connector_profiles", "profiles.json")) as f:
        profiles = json.load(f)
    # the translator emits a connector's statements in the order of the profile's access
    # categories, which a JSON object does not keep: it is written beside them
    for by_dest in profiles["Permissions"].values():
        for profile in by_dest.values():
            profile["Properties"]["AccessCategoryOrder"] = list(profile["Properties"]["AccessCategories"])
    prefix = "arn:aws:iam::aws:policy/"
    properties = resource_properties()
    out = {
        "source": "aws-sam-translator %s (Apache License 2.0): policy_templates.json, aws_managed_policies.json, profiles.json" % samtranslator.__version__,
        "policyTemplates": {
            name: {"parameters": sorted(t.get("Parameters", {})), "definition": t["Definition"]}
            for name, t in sorted(templates.items())
        },
        "managedPolicies": {name: arn[len(prefix):] for name, arn in sorted(managed.items()) if arn.startswith(prefix)},
        "connectorProfiles": {"permissions": profiles["Permissions"], "resources": profiles["CfnResourceProperties"]},
        "resourceProperties": properties,
    }
    # Compressed (deterministically: no name, no time), as the deployer's binary carries it.
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "translator.json.gz")
    text = json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f:
        f.write(text.encode())
    print("%s: %d policy templates, %d managed policies, connector profiles from %d source types" % (
        path, len(out["policyTemplates"]), len(out["managedPolicies"]), len(profiles["Permissions"])), file=sys.stderr)


if __name__ == "__main__":
    main()
