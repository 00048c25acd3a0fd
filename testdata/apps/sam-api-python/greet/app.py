"""GET /greet/{name} of cairn's sample API: a greeting, with the name title-cased."""

import json

from titlecase import titlecase


def handler(event, context):
    name = (event.get("pathParameters") or {}).get("name") or "world"
    body = {"greeting": "hello, " + titlecase(name.replace("-", " "))}
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
