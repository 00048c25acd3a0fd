#!/usr/bin/env python3
"""Generates translator.json, the data cairn's Serverless transform takes from AWS's SAM
translator: its policy templates, the ARNs of the AWS managed policies it knows by name, and
the connector profiles (what AWS::Serverless::Connector grants between two resource types).

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
    out = {
        "source": "aws-sam-translator %s (Apache License 2.0): policy_templates.json, aws_managed_policies.json, profiles.json" % samtranslator.__version__,
        "policyTemplates": {
            name: {"parameters": sorted(t.get("Parameters", {})), "definition": t["Definition"]}
            for name, t in sorted(templates.items())
        },
        "managedPolicies": {name: arn[len(prefix):] for name, arn in sorted(managed.items()) if arn.startswith(prefix)},
        "connectorProfiles": {"permissions": profiles["Permissions"], "resources": profiles["CfnResourceProperties"]},
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
