"""The tick function of cairn's sample schedule: logs each invocation and what it was given."""

import json
import logging

log = logging.getLogger()
log.setLevel(logging.INFO)


def handler(event, context):
    log.info("tick: %s", json.dumps(event, sort_keys=True))
    return {"ok": True, "source": event.get("source", "unknown")}
