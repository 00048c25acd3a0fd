from shared import greeting


def handler(event, context):
    return {"statusCode": 200, "body": greeting("orders")}
