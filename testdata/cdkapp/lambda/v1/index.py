import json
import os


def handler(event, context):
    """Answers with the queue the orders go to."""
    return {"statusCode": 200, "body": json.dumps({"queue": os.environ["QUEUE_URL"], "version": 1})}
