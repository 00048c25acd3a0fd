#!/usr/bin/env python3
"""verdicts.py NAME [FILE...]: what the installed cfn-lint (and, for the SAM translator's
inputs, the installed aws-sam-translator) says of each template of
testdata/corpora/NAME/templates.tar.gz, written to testdata/corpora/NAME/verdicts.json:
per template its SHA-256 (of the archive's bytes) and cfn-lint's errors (E rules: rule, line, message; warnings and
informational rules are left out), and for sam-translator the translator's refusal, if any.
With FILEs (paths inside the archive) it prints their verdicts to stdout instead, which
the Go test that checks the stored verdicts are current compares.

The Go tests (internal/template's TestCorpora) read verdicts.json, so they never run
cfn-lint; `make corpora` regenerates it."""
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

here = os.path.dirname(os.path.abspath(__file__))


SERVERLESS = b"Transform: AWS::Serverless-2016-10-31\n"


def as_serverless(body):
    """The SAM translator's tests translate every input, most of which do not name the
    transform: the template CloudFormation would be given names it first. The Go test
    does the same (corpusTemplate)."""
    lines = body.splitlines(keepends=True)
    if any(line.startswith(b"Transform") for line in lines):
        return body
    if body.startswith(b"%"):  # a directive (%YAML 1.1): the document begins after ---
        for i, line in enumerate(lines):
            if line.rstrip() == b"---":
                return b"".join(lines[:i + 1]) + SERVERLESS + b"".join(lines[i + 1:])
    return SERVERLESS + body


def translate(path):
    """The translator's refusal of the template at path ("" when it translates)."""
    from cfnlint.data import Serverless
    from cfnlint.helpers import load_resource
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser import parser
    from samtranslator.translator.translator import Translator
    from samtranslator.yaml_helper import yaml_parse

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(path) as f:
        try:
            doc = yaml_parse(f.read())
        except Exception as e:  # noqa: BLE001
            return "unparsable: %s" % e
    policies = load_resource(Serverless, "ManagedPolicies.json")
    try:
        Translator(managed_policy_map=policies, sam_parser=parser.Parser()).translate(
            sam_template=doc, parameter_values={}, passthrough_metadata=True)
    except InvalidDocumentException as e:
        return " ".join(c.message for c in e.causes) or str(e)
    except Exception as e:  # noqa: BLE001
        return "%s: %s" % (type(e).__name__, e)
    return ""


def run_lint(tmp, files):
    """cfn-lint's matches for files, None when it crashed."""
    out = subprocess.run(["cfn-lint", "--format", "json", "--"] + files, cwd=tmp,
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout), ""
    except ValueError:
        return None, (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]


def lint(tmp, files):
    """cfn-lint's errors (E rules) per file, in batches of 40; a batch that crashes
    cfn-lint is linted a file at a time, and a file that crashes it alone is recorded as
    a crash (the Go test leaves it out)."""
    errors, crashes = {f: [] for f in files}, {}
    batches = [files[i:i + 40] for i in range(0, len(files), 40)]
    while batches:
        batch = batches.pop(0)
        matches, crash = run_lint(tmp, batch)
        if matches is None:
            if len(batch) == 1:
                crashes[batch[0]] = "cfn-lint crashed: " + crash
            else:
                batches = [[f] for f in batch] + batches
            continue
        for m in matches:
            rule = m["Rule"]["Id"]
            if rule.startswith("E"):
                errors[m["Filename"]].append({"rule": rule, "line": m["Location"]["Start"]["LineNumber"],
                                              "message": m["Message"]})
    return errors, crashes


def main():
    name, only = sys.argv[1], sys.argv[2:]
    import cfnlint.version
    import samtranslator
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(here, name, "templates.tar.gz")) as tf:
            tf.extractall(tmp, filter="data")
        files = []
        for root, _, names in os.walk(tmp):
            for n in names:
                files.append(os.path.relpath(os.path.join(root, n), tmp))
        files.sort()
        if only:
            files = [f for f in files if f in only]
        digests = {}
        for f in files:
            with open(os.path.join(tmp, f), "rb") as fh:
                body = fh.read()
            digests[f] = hashlib.sha256(body).hexdigest()
            if name == "sam-translator":
                with open(os.path.join(tmp, f), "wb") as fh:
                    fh.write(as_serverless(body))
        errors, crashes = lint(tmp, files)
        templates = {}
        for f in files:
            v = {"sha256": digests[f],
                 "errors": sorted(errors[f], key=lambda e: (e["line"], e["rule"], e["message"]))}
            if f in crashes:
                v["crash"] = crashes[f]
            if name == "sam-translator":
                v["translator"] = translate(os.path.join(tmp, f))
            templates[f] = v
    doc = {"corpus": name, "day": datetime.datetime.now(datetime.timezone.utc).date().isoformat(), "cfn-lint": cfnlint.version.__version__,
           "aws-sam-translator": samtranslator.__version__, "templates": templates}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if only:
        sys.stdout.write(text)
    else:
        with open(os.path.join(here, name, "verdicts.json"), "w") as fh:
            fh.write(text)
        print("testdata/corpora/%s/verdicts.json: %d templates" % (name, len(templates)))


if __name__ == "__main__":
    main()
