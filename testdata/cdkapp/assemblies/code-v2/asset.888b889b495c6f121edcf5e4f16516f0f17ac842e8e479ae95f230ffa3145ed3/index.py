import json
import os


def handler(event, context):
    """Answers with the queue the orders go to, and how many records came in."""
    records = len(event.get("Records", []))
    return {"statusCode": 200, "body": json.dumps({"queue": os.environ["QUEUE_URL"], "records": records, "version": 2})}
