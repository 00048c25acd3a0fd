package sqslocal_test

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// queryResponse holds every result element the query protocol returns; each test reads
// the ones its action fills.
type queryResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
	Result    struct {
		QueueUrl               []string
		MessageId              string
		MD5OfMessageBody       string
		MD5OfMessageAttributes string
		Attribute              []struct{ Name, Value string }
		Message                []struct {
			MessageId, ReceiptHandle, MD5OfBody, Body, MD5OfMessageAttributes string
			Attribute                                                         []struct{ Name, Value string }
			MessageAttribute                                                  []struct {
				Name  string
				Value struct{ StringValue, BinaryValue, DataType string }
			}
		}
		SendMessageBatchResultEntry []struct {
			Id, MessageId, MD5OfMessageBody string
		}
		DeleteMessageBatchResultEntry []struct{ Id string }
		BatchResultErrorEntry         []struct {
			Id, Code, Message string
			SenderFault       bool
		}
	} `xml:",any"`
}

type queryError struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Error   struct {
		Type, Code, Message string
	}
	RequestId string
}

// post sends a form the way the AWS CLI v1 does (Action, Version, parameters) and decodes
// the XML answer into out.
func post(t *testing.T, e *env, wantStatus int, out any, params ...string) {
	t.Helper()
	form := url.Values{"Version": {"2012-11-05"}}
	for i := 0; i+1 < len(params); i += 2 {
		form.Add(params[i], params[i+1])
	}
	resp, err := http.PostForm(e.srv.URL+"/", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s: status %d, want %d: %s", form.Get("Action"), resp.StatusCode, wantStatus, body)
	}
	if resp.Header.Get("x-amzn-RequestId") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/xml") {
		t.Fatalf("%s: headers %v", form.Get("Action"), resp.Header)
	}
	if err := xml.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v in %s", form.Get("Action"), err, body)
	}
}

func ok(t *testing.T, e *env, params ...string) queryResponse {
	t.Helper()
	var r queryResponse
	post(t, e, http.StatusOK, &r, params...)
	action := params[1]
	if r.XMLName.Local != action+"Response" || r.Xmlns != "http://queue.amazonaws.com/doc/2012-11-05/" || r.RequestID == "" {
		t.Fatalf("%s: envelope %v xmlns=%q request id %q", action, r.XMLName, r.Xmlns, r.RequestID)
	}
	return r
}

func TestQueryProtocol(t *testing.T) {
	e := newEnv(t, "")
	r := ok(t, e, "Action", "CreateQueue", "QueueName", "cli", "Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "60",
		"Tag.1.Key", "team", "Tag.1.Value", "ops")
	q := e.srv.URL + "/000000000000/cli"
	if len(r.Result.QueueUrl) != 1 || r.Result.QueueUrl[0] != q {
		t.Fatalf("CreateQueue QueueUrl = %v", r.Result.QueueUrl)
	}
	if r := ok(t, e, "Action", "GetQueueUrl", "QueueName", "cli"); r.Result.QueueUrl[0] != q {
		t.Fatalf("GetQueueUrl = %v", r.Result.QueueUrl)
	}
	ok(t, e, "Action", "CreateQueue", "QueueName", "other")
	if r := ok(t, e, "Action", "ListQueues", "QueueNamePrefix", "cl"); len(r.Result.QueueUrl) != 1 || r.Result.QueueUrl[0] != q {
		t.Fatalf("ListQueues = %v", r.Result.QueueUrl)
	}

	sent := ok(t, e, "Action", "SendMessage", "QueueUrl", q, "MessageBody", "hello <world> & more",
		"MessageAttribute.1.Name", "SellerName", "MessageAttribute.1.Value.StringValue", "Example Store", "MessageAttribute.1.Value.DataType", "String")
	if sent.Result.MD5OfMessageBody != md5hex("hello <world> & more") || sent.Result.MD5OfMessageAttributes != "cd28f3b68aeee4b2eac9c66f2f694b58" || sent.Result.MessageId == "" {
		t.Fatalf("SendMessage result = %+v", sent.Result)
	}

	got := ok(t, e, "Action", "ReceiveMessage", "QueueUrl", q, "AttributeName.1", "All", "MessageAttributeName.1", "All", "MaxNumberOfMessages", "10")
	if len(got.Result.Message) != 1 {
		t.Fatalf("ReceiveMessage = %+v", got.Result)
	}
	m := got.Result.Message[0]
	if m.MessageId != sent.Result.MessageId || m.Body != "hello <world> & more" || m.MD5OfBody != sent.Result.MD5OfMessageBody ||
		m.MD5OfMessageAttributes != "cd28f3b68aeee4b2eac9c66f2f694b58" || m.ReceiptHandle == "" {
		t.Fatalf("message = %+v", m)
	}
	attrs := map[string]string{}
	for _, a := range m.Attribute {
		attrs[a.Name] = a.Value
	}
	if attrs["ApproximateReceiveCount"] != "1" || attrs["SenderId"] == "" || attrs["SentTimestamp"] == "" || attrs["ApproximateFirstReceiveTimestamp"] == "" {
		t.Fatalf("system attributes = %v", attrs)
	}
	if len(m.MessageAttribute) != 1 || m.MessageAttribute[0].Name != "SellerName" || m.MessageAttribute[0].Value.StringValue != "Example Store" || m.MessageAttribute[0].Value.DataType != "String" {
		t.Fatalf("message attributes = %+v", m.MessageAttribute)
	}

	qa := ok(t, e, "Action", "GetQueueAttributes", "QueueUrl", q, "AttributeName.1", "All")
	qattrs := map[string]string{}
	for _, a := range qa.Result.Attribute {
		qattrs[a.Name] = a.Value
	}
	if qattrs["VisibilityTimeout"] != "60" || qattrs["ApproximateNumberOfMessagesNotVisible"] != "1" || qattrs["QueueArn"] != "arn:aws:sqs:us-east-1:000000000000:cli" {
		t.Fatalf("GetQueueAttributes = %v", qattrs)
	}
	ok(t, e, "Action", "ChangeMessageVisibility", "QueueUrl", q, "ReceiptHandle", m.ReceiptHandle, "VisibilityTimeout", "90")
	ok(t, e, "Action", "DeleteMessage", "QueueUrl", q, "ReceiptHandle", m.ReceiptHandle)
	ok(t, e, "Action", "SetQueueAttributes", "QueueUrl", q, "Attribute.1.Name", "DelaySeconds", "Attribute.1.Value", "0",
		"Attribute.2.Name", "Policy", "Attribute.2.Value", `{"Version":"2012-10-17"}`)
	if r := ok(t, e, "Action", "GetQueueAttributes", "QueueUrl", q, "AttributeName.1", "Policy", "AttributeName.2", "ApproximateNumberOfMessages"); len(r.Result.Attribute) != 2 {
		t.Fatalf("named attributes = %+v", r.Result.Attribute)
	}

	batch := ok(t, e, "Action", "SendMessageBatch", "QueueUrl", q,
		"SendMessageBatchRequestEntry.1.Id", "good", "SendMessageBatchRequestEntry.1.MessageBody", "one",
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Name", "n", "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType", "Number",
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue", "7",
		"SendMessageBatchRequestEntry.2.Id", "late", "SendMessageBatchRequestEntry.2.MessageBody", "two", "SendMessageBatchRequestEntry.2.DelaySeconds", "1000")
	if len(batch.Result.SendMessageBatchResultEntry) != 1 || batch.Result.SendMessageBatchResultEntry[0].Id != "good" || batch.Result.SendMessageBatchResultEntry[0].MD5OfMessageBody != md5hex("one") {
		t.Fatalf("batch successes = %+v", batch.Result.SendMessageBatchResultEntry)
	}
	if len(batch.Result.BatchResultErrorEntry) != 1 || batch.Result.BatchResultErrorEntry[0].Id != "late" || batch.Result.BatchResultErrorEntry[0].Code != "InvalidParameterValue" || !batch.Result.BatchResultErrorEntry[0].SenderFault {
		t.Fatalf("batch failures = %+v", batch.Result.BatchResultErrorEntry)
	}
	got = ok(t, e, "Action", "ReceiveMessage", "QueueUrl", q, "MessageAttributeName.1", "n")
	if len(got.Result.Message) != 1 || got.Result.Message[0].MessageAttribute[0].Value.StringValue != "7" {
		t.Fatalf("batch message = %+v", got.Result.Message)
	}
	del := ok(t, e, "Action", "DeleteMessageBatch", "QueueUrl", q,
		"DeleteMessageBatchRequestEntry.1.Id", "a", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", got.Result.Message[0].ReceiptHandle,
		"DeleteMessageBatchRequestEntry.2.Id", "b", "DeleteMessageBatchRequestEntry.2.ReceiptHandle", "garbage!")
	if len(del.Result.DeleteMessageBatchResultEntry) != 1 || del.Result.DeleteMessageBatchResultEntry[0].Id != "a" ||
		len(del.Result.BatchResultErrorEntry) != 1 || del.Result.BatchResultErrorEntry[0].Code != "ReceiptHandleIsInvalid" {
		t.Fatalf("DeleteMessageBatch = %+v", del.Result)
	}
	ok(t, e, "Action", "PurgeQueue", "QueueUrl", q)
	ok(t, e, "Action", "DeleteQueue", "QueueUrl", q)
}

func TestQueryErrors(t *testing.T) {
	e := newEnv(t, "")
	tests := []struct {
		name   string
		params []string
		code   string
	}{
		{"missing queue", []string{"Action", "GetQueueUrl", "QueueName", "nope"}, "AWS.SimpleQueueService.NonExistentQueue"},
		{"send to missing queue", []string{"Action", "SendMessage", "QueueUrl", e.srv.URL + "/000000000000/nope", "MessageBody", "x"}, "AWS.SimpleQueueService.NonExistentQueue"},
		{"empty batch", []string{"Action", "DeleteMessageBatch", "QueueUrl", e.srv.URL + "/000000000000/nope"}, "AWS.SimpleQueueService.EmptyBatchRequest"},
		{"unknown action", []string{"Action", "FlyToTheMoon"}, "InvalidAction"},
		{"queue exists differently", []string{"Action", "CreateQueue", "QueueName", "dup", "Attribute.1.Name", "DelaySeconds", "Attribute.1.Value", "9"}, "QueueAlreadyExists"},
	}
	ok(t, e, "Action", "CreateQueue", "QueueName", "dup")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r queryError
			post(t, e, http.StatusBadRequest, &r, tt.params...)
			if r.Error.Code != tt.code || r.Error.Type != "Sender" || r.Error.Message == "" || r.RequestId == "" {
				t.Fatalf("error = %+v, want code %s", r, tt.code)
			}
		})
	}
}
