#!/usr/bin/env python3
"""Runs the installed AWS SAM translator (aws-sam-translator) over templates, as
CloudFormation's AWS::Serverless-2016-10-31 transform does, for cairn's differential tests.

stdin: a JSON list of {"template": {...}, "parameters": {...}} (templates as JSON with
their parameter values); stdout: a JSON list, per template the processed template, or
{"error": "<the translator's message>"} when it refuses it. No AWS call is made: managed
policy names resolve from the map bundled with the translator.
"""

import json
import logging
import os
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
logging.disable(logging.CRITICAL)

from samtranslator.model.exceptions import InvalidDocumentException  # noqa: E402
from samtranslator.translator.transform import transform  # noqa: E402


class NoIAM:
    """A managed policy loader that knows only the translator's bundled map."""

    def load(self):
        return {}


def one(req):
    params = dict(req.get("parameters") or {})
    params.setdefault("AWS::Region", "us-east-1")
    params.setdefault("AWS::AccountId", "000000000000")
    params.setdefault("AWS::Partition", "aws")
    try:
        return transform(req["template"], params, NoIAM())
    except InvalidDocumentException as e:
        msgs = [str(c) for c in e.causes]
        return {"error": "Invalid Serverless Application Specification document. Number of errors found: %d. %s" % (len(msgs), " ".join(msgs))}
    except Exception as e:  # the translator's own failures are refusals too
        return {"error": "%s: %s" % (type(e).__name__, e)}


def main():
    json.dump([one(r) for r in json.load(sys.stdin)], sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
