package sqslocal

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"time"
)

// request is the union of every action's input. Both wire protocols decode into it (the
// JSON decoder matches member names case-insensitively, so CreateQueue's "tags" lands in
// Tags too), which keeps one implementation per action.
type request struct {
	QueueUrl, QueueName, QueueNamePrefix, NextToken string
	MessageBody, ReceiptHandle                      string
	MessageGroupId, MessageDeduplicationId          string
	MaxResults, DelaySeconds                        *int
	MaxNumberOfMessages, VisibilityTimeout          *int
	WaitTimeSeconds                                 *int
	Attributes, Tags                                map[string]string
	AttributeNames, MessageSystemAttributeNames     []string
	MessageAttributeNames, TagKeys                  []string
	MessageAttributes, MessageSystemAttributes      map[string]attribute
	Entries                                         []entry
	moveRequest
}

// entry is the union of the batch actions' entries.
type entry struct {
	Id, MessageBody, ReceiptHandle             string
	MessageGroupId, MessageDeduplicationId     string
	DelaySeconds, VisibilityTimeout            *int
	MessageAttributes, MessageSystemAttributes map[string]attribute
}

type empty struct{}

type listQueuesOutput struct {
	QueueUrls []string `json:",omitempty"`
	NextToken string   `json:",omitempty"`
}

type attributesOutput struct {
	Attributes map[string]string `json:",omitempty"`
}

type receiveOutput struct {
	Messages []receivedMessage `json:",omitempty"`
}

type tagsOutput struct {
	Tags map[string]string `json:",omitempty"`
}

// queueName returns the queue a QueueUrl names: its last path segment, after the account.
func queueName(raw string) (string, error) {
	if raw == "" {
		return "", errMissingParameter("QueueUrl")
	}
	var parts []string
	u, err := url.Parse(raw)
	if err == nil {
		parts = strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	}
	if len(parts) != 2 || parts[1] == "" {
		return "", senderError("InvalidAddress", "", "The address %s is not valid for this endpoint: use the QueueUrl CreateQueue or GetQueueUrl returned", raw)
	}
	return parts[1], nil
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// IsAction reports whether action (a query-protocol Action or the part of X-Amz-Target after
// "AmazonSQS.") is an SQS action this emulator serves; a router that sees only a form body can
// use it to tell SQS requests from other query-protocol services'.
func IsAction(action string) bool { return actions[action] }

// actions lists what this emulator implements.
var actions = map[string]bool{
	"CreateQueue": true, "GetQueueUrl": true, "ListQueues": true, "DeleteQueue": true, "PurgeQueue": true,
	"GetQueueAttributes": true, "SetQueueAttributes": true, "SendMessage": true, "SendMessageBatch": true,
	"ReceiveMessage": true, "DeleteMessage": true, "DeleteMessageBatch": true, "ChangeMessageVisibility": true,
	"ChangeMessageVisibilityBatch": true, "TagQueue": true, "UntagQueue": true, "ListQueueTags": true,
	"ListDeadLetterSourceQueues": true, "StartMessageMoveTask": true, "ListMessageMoveTasks": true, "CancelMessageMoveTask": true,
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string {
	out := make([]string, 0, len(actions))
	for a := range actions {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// do runs one action and returns its output in the JSON protocol's shape.
func (s *Service) do(ctx context.Context, action string, in *request) (any, error) {
	if !actions[action] {
		return nil, senderError("InvalidAction", "", "The action %s is not valid for this endpoint (cairn's local SQS does not emulate it).", action)
	}
	switch action {
	case "CreateQueue":
		return s.createQueue(&createQueueInput{QueueName: in.QueueName, Attributes: in.Attributes, Tags: in.Tags})
	case "GetQueueUrl":
		return s.getQueueURL(in.QueueName)
	case "ListQueues":
		if n := intOr(in.MaxResults, 1000); n < 1 || n > 1000 {
			return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 1000.", n)
		}
		urls, next, err := s.listQueues(in.QueueNamePrefix, intOr(in.MaxResults, 0), in.NextToken)
		return &listQueuesOutput{QueueUrls: urls, NextToken: next}, err
	case "StartMessageMoveTask":
		return s.startMove(&in.moveRequest)
	case "ListMessageMoveTasks":
		in.moveRequest.MaxResults = in.MaxResults
		return s.listMoves(&in.moveRequest)
	case "CancelMessageMoveTask":
		return s.cancelMove(&in.moveRequest)
	}
	name, err := queueName(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	switch action {
	case "DeleteQueue":
		return empty{}, s.deleteQueue(name)
	case "PurgeQueue":
		return empty{}, s.purgeQueue(name)
	case "GetQueueAttributes":
		names := in.AttributeNames
		if len(names) == 0 {
			names = []string{"All"}
		}
		attrs, err := s.getQueueAttributes(name, names)
		return &attributesOutput{Attributes: attrs}, err
	case "SetQueueAttributes":
		return empty{}, s.setQueueAttributes(name, in.Attributes)
	case "SendMessage":
		return s.sendMessage(name, &sendInput{MessageBody: in.MessageBody, DelaySeconds: in.DelaySeconds,
			MessageAttributes: in.MessageAttributes, MessageSystemAttributes: in.MessageSystemAttributes,
			MessageGroupId: in.MessageGroupId, MessageDeduplicationId: in.MessageDeduplicationId})
	case "SendMessageBatch":
		entries := make([]sendBatchEntry, len(in.Entries))
		for i, e := range in.Entries {
			entries[i] = sendBatchEntry{Id: e.Id, sendInput: sendInput{MessageBody: e.MessageBody, DelaySeconds: e.DelaySeconds,
				MessageAttributes: e.MessageAttributes, MessageSystemAttributes: e.MessageSystemAttributes,
				MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId}}
		}
		return s.sendMessageBatch(name, entries)
	case "ReceiveMessage":
		p := receiveParams{max: intOr(in.MaxNumberOfMessages, 1), visibility: intOr(in.VisibilityTimeout, -1),
			systemAttrs: append(in.AttributeNames, in.MessageSystemAttributeNames...), messageAttrs: in.MessageAttributeNames}
		if p.max < 1 || p.max > 10 {
			return nil, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", p.max)
		}
		if in.VisibilityTimeout != nil && (p.visibility < 0 || p.visibility > 43200) {
			return nil, errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: must be between 0 and 43200.", p.visibility)
		}
		if in.WaitTimeSeconds != nil {
			if w := *in.WaitTimeSeconds; w < 0 || w > 20 {
				return nil, errInvalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: must be >= 0 and <= 20, if provided.", w)
			}
			p.wait, p.waitSet = time.Duration(*in.WaitTimeSeconds)*time.Second, true
		}
		msgs, err := s.receive(ctx, name, p)
		return &receiveOutput{Messages: msgs}, err
	case "DeleteMessage":
		return empty{}, s.deleteMessage(name, in.ReceiptHandle)
	case "DeleteMessageBatch":
		return s.receiptBatch(name, receiptEntries(in.Entries), func(q *queue, e receiptEntry) error {
			return s.deleteLocked(q, e.ReceiptHandle)
		})
	case "ChangeMessageVisibility":
		if in.VisibilityTimeout == nil {
			return nil, errMissingParameter("VisibilityTimeout")
		}
		return empty{}, s.changeVisibility(name, in.ReceiptHandle, *in.VisibilityTimeout)
	case "ChangeMessageVisibilityBatch":
		return s.receiptBatch(name, receiptEntries(in.Entries), func(q *queue, e receiptEntry) error {
			return s.changeVisibilityLocked(q, e.ReceiptHandle, e.VisibilityTimeout)
		})
	case "ListDeadLetterSourceQueues":
		return s.listDeadLetterSources(name, in.MaxResults, in.NextToken)
	case "TagQueue":
		return empty{}, s.tagQueue(name, in.Tags, nil)
	case "UntagQueue":
		return empty{}, s.tagQueue(name, nil, in.TagKeys)
	case "ListQueueTags":
		tags, err := s.listQueueTags(name)
		return &tagsOutput{Tags: tags}, err
	}
	return nil, &Error{Code: "InternalError", QueryCode: "InternalError", Status: 500, Message: "action " + action + " is listed but not implemented"}
}

func receiptEntries(in []entry) []receiptEntry {
	out := make([]receiptEntry, len(in))
	for i, e := range in {
		out[i] = receiptEntry{Id: e.Id, ReceiptHandle: e.ReceiptHandle, VisibilityTimeout: intOr(e.VisibilityTimeout, 0)}
	}
	return out
}
