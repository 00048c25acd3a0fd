#!/usr/bin/env python3
"""Regenerates events/*.json: payloads in the exact shape AWS delivers them to Lambda.

Nested payloads (an S3 event or SNS envelope inside an SQS body, a custom resource request
inside an SNS envelope) are JSON strings, with md5OfBody computed from the body, so writing
them by hand invites mistakes. Run from the repository root: python3 internal/awslocal/testdata/genevents.py
"""
import hashlib, json, os

REGION, ACCOUNT = "us-east-1", "000000000000"
BUCKET = "cairn-state"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/shop-app/5b0f3f20-6a1f-11f0-9c2b-0affd3a1e5b1"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:cairn-ports"


def sqs_event(queue, body, msg_id, sender, sent="1764489600000", attrs=None):
    return {"Records": [{
        "messageId": msg_id,
        "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a+mCJlUA7yPQbDSGDLxTbwsFYNkhn5/L5Sbp1N2vUfz1E3Ofu+LMaoEb1jgG7AfoRuCHQ0ESnzLEYZzXlrY6gfSqnOFCyGGHKbg1pSZsgKtQ6xJCKkpJp3ssyLLWKh3pIbn7Wh4A7J7JNNdXZdRDGEqMajtUfwSGqPeQDhHAmBlgi3xq+GTdvqn6ZDGxfJXJE/lUlVwvB4b8OVXqTRb0Q0k8XRYDoPhdjAVRp4cB7iZIVbC9xjUQOVOY7hLHNfwVFMY0Kl3lZvNuJh9NcExU6iVMT5BZpMQ8yo2OsTQh7gDYS8gBuQNsSVVvPpEi3XAKMmKDcKXbF0fdAQO5h1MAf2HGqvUCqJnMaDA==",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": sent,
            "SenderId": sender,
            "ApproximateFirstReceiveTimestamp": str(int(sent) + 3),
        },
        "messageAttributes": attrs or {},
        "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        "awsRegion": REGION,
    }]}


def dumps(v):
    return json.dumps(v, separators=(",", ":"))


def sns_envelope(message, subject, msg_id, ts):
    sub = TOPIC + ":2bcfbf39-05c3-41de-beaa-fcfcc21c8f55"
    return json.dumps({
        "Type": "Notification",
        "MessageId": msg_id,
        "TopicArn": TOPIC,
        "Subject": subject,
        "Message": message,
        "Timestamp": ts,
        "SignatureVersion": "1",
        "Signature": "EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=",
        "SigningCertURL": f"https://sns.{REGION}.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
        "UnsubscribeURL": f"https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={sub}",
    }, indent=2)


def s3_put(key="deployments/shop.zip", size=2048, etag="0f343b0931126a20f133d67c2b018a3b",
           version="3/L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo", sequencer="0067F1A2B3C4D5E6F7",
           config="deployments", msg_id="059f36b4-87a3-44ab-83d2-661975830a7d"):
    record = {"Records": [{
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": REGION,
        "eventTime": "2026-11-30T08:00:00.123Z",
        "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "AWS:AIDAJDPLRKLG7UEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "203.0.113.10"},
        "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810", "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": config,
            "bucket": {"name": BUCKET, "ownerIdentity": {"principalId": "A3NL1KOZZKExample"}, "arn": f"arn:aws:s3:::{BUCKET}"},
            "object": {"key": key, "size": size, "eTag": etag, "versionId": version, "sequencer": sequencer},
        },
    }]}
    return sqs_event("cairn-deploy", dumps(record), msg_id, "AIDAJHIPRHEMV73VRJEBU")


def custom_resource(kind):
    request_id = {"Create": "8f3a2c1e-4b5d-4e6f-9a0b-1c2d3e4f5a6b", "Update": "1e2d3c4b-5a69-4788-96a5-b4c3d2e1f0a9", "Delete": "7c6b5a49-3827-4160-9f8e-7d6c5b4a3928"}[kind]
    req = {
        "RequestType": kind,
        "ServiceToken": TOPIC,
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn%3Aaws%3Acloudformation%3Aus-east-1%3A000000000000%3Astack/shop-app/5b0f3f20-6a1f-11f0-9c2b-0affd3a1e5b1%7CListenerPort%7C" + request_id + "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261130T080000Z&X-Amz-SignedHeaders=host&X-Amz-Expires=7200&X-Amz-Credential=AKIA6MM33EXAMPLE%2F20261130%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=3b8c1f0e5d2a4f6b8c0e2d4f6a8b0c2e4f6a8b0c2e4f6a8b0c2e4f6a8b0c2e4f",
        "StackId": STACK_ID,
        "RequestId": request_id,
        "LogicalResourceId": "ListenerPort",
        "ResourceType": "Custom::PortAllocation",
        "ResourceProperties": {"ServiceToken": TOPIC, "Pool": "default"},
    }
    if kind != "Create":
        req["PhysicalResourceId"] = "default:20000:5c2d7f1a"
    if kind == "Update":
        # Count changes: the allocation is replaced (a new block and physical id).
        req["ResourceProperties"] = {"ServiceToken": TOPIC, "Pool": "default", "Count": "2"}
        req["OldResourceProperties"] = {"ServiceToken": TOPIC, "Pool": "default"}
    body = sns_envelope(dumps(req), "AWS CloudFormation custom resource request", "b0f5d6a4-2c1e-5f3a-8e7d-9c0b1a2d3e4f", "2026-11-30T08:00:00.456Z")
    return sqs_event("cairn-ports", body, "c8a2e3f4-5b6c-4d7e-8f90-a1b2c3d4e5f6", "AIDAIT2UOQQY3AUEKVGXU")


def cfn_event(detail_type, detail):
    return {
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": detail_type,
        "source": "aws.cloudformation",
        "account": ACCOUNT,
        "time": "2026-11-30T08:05:00Z",
        "region": REGION,
        "resources": [STACK_ID],
        "detail": detail,
    }


EVENTS = {
    "s3-put-sqs.json": s3_put(),
    "s3-plan-sqs.json": s3_put("plans/shop.zip", 2048, "6c1f5d7e8a9b0c1d2e3f4a5b6c7d8e9f", "3/Pq2Kb0nWm4Yx8Zc6Vd1Le7Rf9Tg3Hh5Jj2Kk4Ll6Mm8Nn0Oo",
                               "0067F1A2B3C4D5E700", "plans", "2b7c9d1e-3f4a-4b5c-8d6e-7f8a9b0c1d2e"),
    "s3-approval-sqs.json": s3_put("approvals/shop/20261130-080500-9f8e7d6c", 0, "d41d8cd98f00b204e9800998ecf8427e",
                                   "3/Ap1Bq2Cr3Ds4Et5Fu6Gv7Hw8Ix9Jy0Kz1La2Mb3Nc4Od5Pe6", "0067F1A2B3C4D5E701", "approvals",
                                   "8e9f0a1b-2c3d-4e5f-a6b7-c8d9e0f1a2b3"),
    "deploy-heartbeat.json": sqs_event("cairn-deploy", '{"cairn":"heartbeat","deployment":"shop","run":"20261130-080000-1a2b3c4d"}',
                                       "5d1c2b3a-4e5f-4a6b-9c7d-8e9f0a1b2c3d", "AROAJ2UCCR6DPCEXAMPLE:cairn-deployer"),
    "deploy-check.json": sqs_event("cairn-deploy", '{"cairn":"check","deployment":"shop","run":"20261130-080000-1a2b3c4d"}',
                                   "7a3e4f5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b", "AROAJ2UCCR6DPCEXAMPLE:cairn-deployer"),
    "sqs-message.json": sqs_event("cairn-deploy", '{"kind":"advance","run":"shop/20261130T080000Z-1a2b"}',
                                  "19dd0b57-b21e-4ac1-bd88-01bbb068cb78", "AIDAIENQZJOLO23YVJ4VO",
                                  attrs={"kind": {"stringValue": "advance", "stringListValues": [], "binaryListValues": [], "dataType": "String"}}),
    "sns-in-sqs.json": sqs_event("cairn-ports", sns_envelope("drift report for shop: 1 stack drifted", "cairn drift report",
                                                             "95df01b4-ee98-5cb9-9903-4c221d41eb5e", "2026-11-30T08:00:00.789Z"),
                                 "2e1424d4-f796-459a-8184-9c92662be6da", "AIDAIT2UOQQY3AUEKVGXU"),
    "custom-resource-create.json": custom_resource("Create"),
    "custom-resource-update.json": custom_resource("Update"),
    "custom-resource-delete.json": custom_resource("Delete"),
    "scheduled-event.json": {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2026-11-30T12:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/cairn-drift-check"],
        "detail": {},
    },
    "stack-status-change.json": sqs_event("cairn-deploy", dumps(cfn_event("CloudFormation Stack Status Change", {
        "stack-id": STACK_ID,
        "status-details": {"status": "UPDATE_COMPLETE", "status-reason": ""},
        "client-request-token": "cairn-shop-20261130T080000Z-1a2b",
    })), "4f5e6d7c-8b9a-4c0d-9e1f-2a3b4c5d6e7f", "AIDAJXNJGGKNS7OSV23OI"),
    "drift-status-change.json": sqs_event("cairn-drift", dumps(cfn_event("CloudFormation Drift Detection Status Change", {
        "stack-id": STACK_ID,
        "stack-drift-detection-id": "d9c8b7a6-5f4e-4d3c-2b1a-0f9e8d7c6b5a",
        "status-details": {"stack-drift-status": "DRIFTED", "detection-status": "DETECTION_COMPLETE"},
        "drift-detection-details": {"drifted-stack-resource-count": 1},
        "client-request-token": "cairn-drift-20261130T120000Z",
    })), "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", "AIDAJXNJGGKNS7OSV23OI"),
}

for name, payload in EVENTS.items():
    with open(os.path.join("events", name), "w") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")
