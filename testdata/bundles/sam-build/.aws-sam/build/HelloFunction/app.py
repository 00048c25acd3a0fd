import os

import requests


def lambda_handler(event, context):
    return {"statusCode": 200, "body": os.environ["GREETING"] + " " + requests.__version__}
