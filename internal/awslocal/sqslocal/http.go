package sqslocal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const (
	xmlns      = "http://queue.amazonaws.com/doc/2012-11-05/"
	jsonType   = "application/x-amz-json-1.0"
	jsonPrefix = "AmazonSQS."
)

// ServeHTTP answers one SQS request: AWS JSON 1.0 when X-Amz-Target names the action,
// otherwise the query protocol (form Action=..., XML answers). Every answer carries
// x-amzn-RequestId.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newID()
	w.Header().Set("x-amzn-RequestId", id)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.serveJSON(w, r, strings.TrimPrefix(target, jsonPrefix))
		return
	}
	s.serveQuery(w, r, id)
}

func (s *Service) serveJSON(w http.ResponseWriter, r *http.Request, action string) {
	var in request
	body, err := io.ReadAll(r.Body)
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		s.writeJSONError(w, action, senderError("SerializationException", "", "Cannot read the %s request body as JSON: %v", action, err))
		return
	}
	out, err := s.do(r.Context(), action, &in)
	if err != nil {
		s.writeJSONError(w, action, err)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.writeJSONError(w, action, err)
		return
	}
	w.Header().Set("Content-Type", jsonType)
	_, _ = w.Write(b)
}

func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: "InternalError", QueryCode: "InternalError", Status: http.StatusInternalServerError, Message: err.Error()}
}

func (s *Service) writeJSONError(w http.ResponseWriter, action string, err error) {
	e := asError(err)
	s.log.Debug("sqs request failed", "action", action, "code", e.Code, "err", e.Message)
	w.Header().Set("Content-Type", jsonType)
	w.Header().Set("x-amzn-query-error", e.QueryCode+";"+e.fault())
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + e.Code, "message": e.Message})
	_, _ = w.Write(b)
}

func (s *Service) serveQuery(w http.ResponseWriter, r *http.Request, id string) {
	if err := r.ParseForm(); err != nil {
		s.writeXMLError(w, id, senderError("MalformedQueryString", "", "Cannot parse the request form: %v", err))
		return
	}
	action := r.Form.Get("Action")
	if action == "" {
		s.writeXMLError(w, id, errMissingParameter("Action"))
		return
	}
	in, err := parseForm(action, r.Form)
	if err != nil {
		s.writeXMLError(w, id, err)
		return
	}
	// Older SDKs address the queue by posting to its URL instead of passing QueueUrl.
	if in.QueueUrl == "" && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 1 {
		in.QueueUrl = s.opts.BaseURL() + r.URL.Path
	}
	out, err := s.do(r.Context(), action, in)
	if err != nil {
		s.writeXMLError(w, id, err)
		return
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: xmlns}}}
	_ = enc.EncodeToken(start)
	if res := xmlResult(action, out); res != nil {
		if err := enc.EncodeElement(res, xml.StartElement{Name: xml.Name{Local: action + "Result"}}); err != nil {
			s.writeXMLError(w, id, err)
			return
		}
	}
	_ = enc.EncodeElement(struct {
		RequestId string
	}{id}, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}})
	_ = enc.EncodeToken(start.End())
	_ = enc.Flush()
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(buf.Bytes())
}

func (s *Service) writeXMLError(w http.ResponseWriter, id string, err error) {
	e := asError(err)
	s.log.Debug("sqs request failed", "code", e.QueryCode, "err", e.Message)
	type xmlError struct {
		Type, Code, Message string
		Detail              struct{}
	}
	b, _ := xml.Marshal(struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     xmlError
		RequestId string
	}{Xmlns: xmlns, Error: xmlError{Type: e.fault(), Code: e.QueryCode, Message: e.Message}, RequestId: id})
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

var memberRE = regexp.MustCompile(`^([A-Za-z]+)\.(\d+)(\.|$)`)

// members returns the sorted indexes N of the flattened list prefix.N... in form.
func members(form url.Values, prefix string) []string {
	seen := map[int]bool{}
	for k := range form {
		if m := memberRE.FindStringSubmatch(k); m != nil && m[1] == prefix {
			n, _ := strconv.Atoi(m[2])
			seen[n] = true
		}
	}
	idx := make([]int, 0, len(seen))
	for n := range seen {
		idx = append(idx, n)
	}
	sort.Ints(idx)
	out := make([]string, len(idx))
	for i, n := range idx {
		out[i] = prefix + "." + strconv.Itoa(n)
	}
	return out
}

func formInt(form url.Values, key string) (*int, error) {
	v, ok := form[key]
	if !ok || len(v) == 0 {
		return nil, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return nil, errInvalidParameter("Value %s for parameter %s is invalid. Reason: not an integer.", v[0], key)
	}
	return &n, nil
}

func formList(form url.Values, prefix string) []string {
	var out []string
	for _, p := range members(form, prefix) {
		out = append(out, form.Get(p))
	}
	return out
}

func formMap(form url.Values, prefix, key, value string) map[string]string {
	var out map[string]string
	for _, p := range members(form, prefix) {
		if out == nil {
			out = map[string]string{}
		}
		out[form.Get(p+"."+key)] = form.Get(p + "." + value)
	}
	return out
}

// formAttributes reads MessageAttribute.N.Name / .Value.DataType / .Value.StringValue /
// .Value.BinaryValue (base64) under base ("" or an entry's "X.N.").
func formAttributes(form url.Values, base, prefix string) (map[string]attribute, error) {
	var out map[string]attribute
	sub := url.Values{}
	for k, v := range form {
		if strings.HasPrefix(k, base) {
			sub[strings.TrimPrefix(k, base)] = v
		}
	}
	for _, p := range members(sub, prefix) {
		if out == nil {
			out = map[string]attribute{}
		}
		a := attribute{DataType: sub.Get(p + ".Value.DataType")}
		if v, ok := sub[p+".Value.StringValue"]; ok {
			a.StringValue = &v[0]
		}
		if v := sub.Get(p + ".Value.BinaryValue"); v != "" {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, errInvalidParameter("Message attribute %s has a BinaryValue that is not base64: %v", sub.Get(p+".Name"), err)
			}
			a.BinaryValue = b
		}
		out[sub.Get(p+".Name")] = a
	}
	return out, nil
}

// parseForm reads a query-protocol request into the union request.
func parseForm(action string, form url.Values) (*request, error) {
	in := &request{
		QueueUrl:                    form.Get("QueueUrl"),
		QueueName:                   form.Get("QueueName"),
		QueueNamePrefix:             form.Get("QueueNamePrefix"),
		NextToken:                   form.Get("NextToken"),
		MessageBody:                 form.Get("MessageBody"),
		ReceiptHandle:               form.Get("ReceiptHandle"),
		MessageGroupId:              form.Get("MessageGroupId"),
		MessageDeduplicationId:      form.Get("MessageDeduplicationId"),
		Attributes:                  formMap(form, "Attribute", "Name", "Value"),
		Tags:                        formMap(form, "Tag", "Key", "Value"),
		AttributeNames:              formList(form, "AttributeName"),
		MessageSystemAttributeNames: formList(form, "MessageSystemAttributeName"),
		MessageAttributeNames:       formList(form, "MessageAttributeName"),
		TagKeys:                     formList(form, "TagKey"),
		moveRequest:                 moveRequest{SourceArn: form.Get("SourceArn"), DestinationArn: form.Get("DestinationArn"), TaskHandle: form.Get("TaskHandle")},
	}
	var err error
	if in.MaxNumberOfMessagesPerSecond, err = formInt(form, "MaxNumberOfMessagesPerSecond"); err != nil {
		return nil, err
	}
	for key, dst := range map[string]**int{
		"MaxResults": &in.MaxResults, "DelaySeconds": &in.DelaySeconds, "MaxNumberOfMessages": &in.MaxNumberOfMessages,
		"VisibilityTimeout": &in.VisibilityTimeout, "WaitTimeSeconds": &in.WaitTimeSeconds,
	} {
		if *dst, err = formInt(form, key); err != nil {
			return nil, err
		}
	}
	if in.MessageAttributes, err = formAttributes(form, "", "MessageAttribute"); err != nil {
		return nil, err
	}
	if in.MessageSystemAttributes, err = formAttributes(form, "", "MessageSystemAttribute"); err != nil {
		return nil, err
	}
	for _, p := range members(form, action+"RequestEntry") {
		e := entry{Id: form.Get(p + ".Id"), MessageBody: form.Get(p + ".MessageBody"), ReceiptHandle: form.Get(p + ".ReceiptHandle"),
			MessageGroupId: form.Get(p + ".MessageGroupId"), MessageDeduplicationId: form.Get(p + ".MessageDeduplicationId")}
		if e.DelaySeconds, err = formInt(form, p+".DelaySeconds"); err != nil {
			return nil, err
		}
		if e.VisibilityTimeout, err = formInt(form, p+".VisibilityTimeout"); err != nil {
			return nil, err
		}
		if e.MessageAttributes, err = formAttributes(form, p+".", "MessageAttribute"); err != nil {
			return nil, err
		}
		if e.MessageSystemAttributes, err = formAttributes(form, p+".", "MessageSystemAttribute"); err != nil {
			return nil, err
		}
		in.Entries = append(in.Entries, e)
	}
	return in, nil
}

type xmlNameValue struct{ Name, Value string }

type xmlAttributeValue struct {
	StringValue string `xml:",omitempty"`
	BinaryValue string `xml:",omitempty"`
	DataType    string
}

type xmlMessageAttribute struct {
	Name  string
	Value xmlAttributeValue
}

type xmlBatchError struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

func sortedPairs(m map[string]string) []xmlNameValue {
	out := make([]xmlNameValue, 0, len(m))
	for k, v := range m {
		out = append(out, xmlNameValue{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func xmlErrors(in []batchError) []xmlBatchError {
	out := make([]xmlBatchError, len(in))
	for i, e := range in {
		out[i] = xmlBatchError{Id: e.Id, SenderFault: e.SenderFault, Code: e.Code, Message: e.Message}
	}
	return out
}

type xmlSendResult struct {
	Id                           string `xml:",omitempty"`
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string `xml:",omitempty"`
	MD5OfMessageSystemAttributes string `xml:",omitempty"`
	SequenceNumber               string `xml:",omitempty"`
}

// xmlResult shapes an action's output as the query protocol's <ActionResult> content;
// nil means the response has no result element.
func xmlResult(action string, out any) any {
	switch o := out.(type) {
	case *queueURLOutput:
		return o
	case *listQueuesOutput:
		return struct {
			QueueUrl  []string
			NextToken string `xml:",omitempty"`
		}{o.QueueUrls, o.NextToken}
	case *deadLetterSourcesOutput:
		return struct {
			QueueUrl  []string
			NextToken string `xml:",omitempty"`
		}{o.QueueUrls, o.NextToken}
	case *startMoveOutput, *cancelMoveOutput:
		return o
	case *listMoveOutput:
		return struct {
			Result []moveTaskResult
		}{o.Results}
	case *attributesOutput:
		return struct{ Attribute []xmlNameValue }{sortedPairs(o.Attributes)}
	case *tagsOutput:
		type tag struct{ Key, Value string }
		var tags []tag
		for _, p := range sortedPairs(o.Tags) {
			tags = append(tags, tag{p.Name, p.Value})
		}
		return struct{ Tag []tag }{tags}
	case *sendOutput:
		return xmlSendResult{MessageId: o.MessageId, MD5OfMessageBody: o.MD5OfMessageBody,
			MD5OfMessageAttributes: o.MD5OfMessageAttributes, MD5OfMessageSystemAttributes: o.MD5OfMessageSystemAttributes,
			SequenceNumber: o.SequenceNumber}
	case *sendBatchOutput:
		var ok []xmlSendResult
		for _, r := range o.Successful {
			ok = append(ok, xmlSendResult{Id: r.Id, MessageId: r.MessageId, MD5OfMessageBody: r.MD5OfMessageBody,
				MD5OfMessageAttributes: r.MD5OfMessageAttributes, MD5OfMessageSystemAttributes: r.MD5OfMessageSystemAttributes,
				SequenceNumber: r.SequenceNumber})
		}
		return struct {
			SendMessageBatchResultEntry []xmlSendResult
			BatchResultErrorEntry       []xmlBatchError
		}{ok, xmlErrors(o.Failed)}
	case *batchOutput:
		ids := make([]string, len(o.Successful))
		for i, r := range o.Successful {
			ids[i] = r.Id
		}
		return receiptBatchResult{entry: action + "ResultEntry", ids: ids, errs: xmlErrors(o.Failed)}
	case *receiveOutput:
		type xmlMessage struct {
			MessageId, ReceiptHandle, MD5OfBody, Body string
			Attribute                                 []xmlNameValue
			MD5OfMessageAttributes                    string `xml:",omitempty"`
			MessageAttribute                          []xmlMessageAttribute
		}
		var msgs []xmlMessage
		for _, m := range o.Messages {
			x := xmlMessage{MessageId: m.MessageId, ReceiptHandle: m.ReceiptHandle, MD5OfBody: m.MD5OfBody, Body: m.Body,
				Attribute: sortedPairs(m.Attributes), MD5OfMessageAttributes: m.MD5OfMessageAttributes}
			names := make([]string, 0, len(m.MessageAttributes))
			for n := range m.MessageAttributes {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				a := m.MessageAttributes[n]
				v := xmlAttributeValue{StringValue: deref(a.StringValue), DataType: a.DataType}
				if a.BinaryValue != nil {
					v.BinaryValue = base64.StdEncoding.EncodeToString(a.BinaryValue)
				}
				x.MessageAttribute = append(x.MessageAttribute, xmlMessageAttribute{Name: n, Value: v})
			}
			msgs = append(msgs, x)
		}
		return struct{ Message []xmlMessage }{msgs}
	}
	return nil
}

// receiptBatchResult is a DeleteMessageBatch or ChangeMessageVisibilityBatch result, whose
// success element is named for the action (DeleteMessageBatchResultEntry, ...).
type receiptBatchResult struct {
	entry string
	ids   []string
	errs  []xmlBatchError
}

func (b receiptBatchResult) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, id := range b.ids {
		if err := e.EncodeElement(struct{ Id string }{id}, xml.StartElement{Name: xml.Name{Local: b.entry}}); err != nil {
			return err
		}
	}
	for _, be := range b.errs {
		if err := e.EncodeElement(be, xml.StartElement{Name: xml.Name{Local: "BatchResultErrorEntry"}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}
