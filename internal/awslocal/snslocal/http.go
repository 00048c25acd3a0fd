package snslocal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const xmlns = "http://sns.amazonaws.com/doc/2010-03-31/"

// ServeHTTP serves the SNS query protocol (form-encoded Action, XML answers).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.writeError(w, invalid("could not parse the form: %v", err))
		return
	}
	f := r.Form
	action := f.Get("Action")
	var result any
	var err error
	switch action {
	case "CreateTopic":
		var arn string
		arn, err = s.CreateTopic(f.Get("Name"), mapParam(f, "Attributes.entry", "key", "value"), mapParam(f, "Tags.member", "Key", "Value"))
		result = struct {
			TopicArn string
		}{arn}
	case "DeleteTopic":
		err = s.DeleteTopic(f.Get("TopicArn"))
	case "ListTopics":
		type member struct{ TopicArn string }
		var out struct {
			Topics []member `xml:"Topics>member"`
		}
		for _, arn := range s.listTopics() {
			out.Topics = append(out.Topics, member{arn})
		}
		result = out
	case "GetTopicAttributes":
		var attrs map[string]string
		attrs, err = s.topicAttributes(f.Get("TopicArn"))
		result = struct {
			Attributes entries `xml:"Attributes>entry"`
		}{toEntries(attrs)}
	case "Subscribe":
		var arn string
		arn, err = s.Subscribe(f.Get("TopicArn"), f.Get("Protocol"), f.Get("Endpoint"), mapParam(f, "Attributes.entry", "key", "value"))
		result = struct{ SubscriptionArn string }{arn}
	case "Unsubscribe":
		err = s.Unsubscribe(f.Get("SubscriptionArn"))
	case "SetSubscriptionAttributes":
		err = s.SetSubscriptionAttribute(f.Get("SubscriptionArn"), f.Get("AttributeName"), f.Get("AttributeValue"))
	case "GetSubscriptionAttributes":
		var attrs map[string]string
		attrs, err = s.SubscriptionAttributes(f.Get("SubscriptionArn"))
		result = struct {
			Attributes entries `xml:"Attributes>entry"`
		}{toEntries(attrs)}
	case "SetTopicAttributes":
		err = s.SetTopicAttribute(f.Get("TopicArn"), f.Get("AttributeName"), f.Get("AttributeValue"))
	case "ListSubscriptionsByTopic", "ListSubscriptions":
		var subs []subscription
		subs, err = s.subscriptions(f.Get("TopicArn"))
		type member struct {
			TopicArn, Protocol, SubscriptionArn, Owner, Endpoint string
		}
		var out struct {
			Subscriptions []member `xml:"Subscriptions>member"`
		}
		for _, sub := range subs {
			topicARN := sub.ARN[:strings.LastIndexByte(sub.ARN, ':')]
			out.Subscriptions = append(out.Subscriptions, member{topicARN, sub.Protocol, sub.ARN, s.opts.AccountID, sub.Endpoint})
		}
		result = out
	case "Publish":
		var id, seq string
		id, seq, err = s.publishForm(r, f)
		result = struct {
			MessageId      string
			SequenceNumber string `xml:",omitempty"`
		}{id, seq}
	case "PublishBatch":
		result, err = s.publishBatchForm(r, f)
	case "":
		err = &Error{Code: "MissingAction", Status: 400, Message: "Missing Action parameter"}
	default:
		err = &Error{Code: "InvalidAction", Status: 400, Message: "The action " + action + " is not valid for this endpoint (the local emulator does not implement it)"}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeResult(w, action, result)
}

func (s *Service) publishForm(r *http.Request, f map[string][]string) (string, string, error) {
	arn := first(f, "TopicArn")
	if arn == "" {
		arn = first(f, "TargetArn")
	}
	if arn == "" {
		return "", "", invalid("TopicArn or TargetArn Reason: no value for required parameter")
	}
	message, attrs, err := messageForm(f, "")
	if err != nil {
		return "", "", err
	}
	return s.publishFIFO(r.Context(), arn, first(f, "Subject"), message, attrs, fifoIDs{first(f, "MessageGroupId"), first(f, "MessageDeduplicationId")})
}

// first returns the first value of a form field, "" when it has none.
func first(f map[string][]string, k string) string {
	if v := f[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// messageForm reads the message (with MessageStructure json, its sqs or default entry)
// and message attributes a Publish request, or a PublishBatch entry (prefix
// "PublishBatchRequestEntries.member.N."), carries.
func messageForm(f map[string][]string, prefix string) (string, map[string]messageAttribute, error) {
	get := func(k string) string { return first(f, prefix+k) }
	message := get("Message")
	if get("MessageStructure") == "json" {
		var per map[string]string
		if err := json.Unmarshal([]byte(message), &per); err != nil || per["default"] == "" {
			return "", nil, invalid("Message Structure - No default entry in JSON message body")
		}
		message = per["default"]
		if v, ok := per["sqs"]; ok {
			message = v
		}
	}
	attrs := map[string]messageAttribute{}
	for i := 1; ; i++ {
		p := "MessageAttributes.entry." + strconv.Itoa(i) + "."
		name := get(p + "Name")
		if name == "" {
			break
		}
		a := messageAttribute{DataType: get(p + "Value.DataType"), StringValue: get(p + "Value.StringValue")}
		if b := get(p + "Value.BinaryValue"); b != "" {
			raw, err := base64.StdEncoding.DecodeString(b)
			if err != nil {
				return "", nil, invalid("The message attribute '%s' has an invalid binary value", name)
			}
			a.BinaryValue = raw
		}
		if err := checkAttribute(name, a); err != nil {
			return "", nil, err
		}
		attrs[name] = a
	}
	return message, attrs, nil
}

// batchEntryID is what a PublishBatch entry id may be.
var batchEntryID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

type batchSuccess struct {
	Id, MessageId  string
	SequenceNumber string `xml:",omitempty"`
}

type batchFailure struct {
	Id, Code, Message string
	SenderFault       bool
}

// publishBatchForm publishes up to ten messages to one topic, as PublishBatch does: the
// request fails as a whole when its entries are malformed or the topic does not exist;
// otherwise each entry succeeds or fails on its own.
// See https://docs.aws.amazon.com/sns/latest/api/API_PublishBatch.html
func (s *Service) publishBatchForm(r *http.Request, f map[string][]string) (any, error) {
	arn := first(f, "TopicArn")
	if arn == "" {
		return nil, invalid("TopicArn Reason: no value for required parameter")
	}
	var prefixes []string
	for i := 1; ; i++ {
		p := "PublishBatchRequestEntries.member." + strconv.Itoa(i) + "."
		if _, ok := f[p+"Id"]; !ok {
			break
		}
		prefixes = append(prefixes, p)
	}
	if len(prefixes) == 0 {
		return nil, &Error{Code: "EmptyBatchRequest", Status: 400, Message: "The batch request doesn't contain any entries"}
	}
	if len(prefixes) > 10 {
		return nil, &Error{Code: "TooManyEntriesInBatchRequest", Status: 400, Message: "The batch request contains more entries than permissible."}
	}
	seen := map[string]bool{}
	total := 0
	for _, p := range prefixes {
		id := first(f, p+"Id")
		if !batchEntryID.MatchString(id) {
			return nil, &Error{Code: "InvalidBatchEntryId", Status: 400, Message: "The Id of a batch entry in a batch request doesn't abide by the specification."}
		}
		if seen[id] {
			return nil, &Error{Code: "BatchEntryIdsNotDistinct", Status: 400, Message: "Two or more batch entries in the request have the same Id."}
		}
		seen[id] = true
		total += len(first(f, p+"Message"))
	}
	if total > 256*1024 {
		return nil, &Error{Code: "BatchRequestTooLong", Status: 400, Message: "The length of all the messages put together is more than the limit."}
	}
	if !s.Exists(arn) {
		return nil, notFound("Topic does not exist")
	}
	var out struct {
		Successful []batchSuccess `xml:"Successful>member"`
		Failed     []batchFailure `xml:"Failed>member"`
	}
	for _, p := range prefixes {
		id := first(f, p+"Id")
		message, attrs, err := messageForm(f, p)
		var msgID, seq string
		if err == nil {
			msgID, seq, err = s.publishFIFO(r.Context(), arn, first(f, p+"Subject"), message, attrs, fifoIDs{first(f, p+"MessageGroupId"), first(f, p+"MessageDeduplicationId")})
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				e = &Error{Code: "InternalError", Status: 500, Message: err.Error()}
			}
			out.Failed = append(out.Failed, batchFailure{Id: id, Code: e.Code, Message: e.Message, SenderFault: e.Status < 500})
			continue
		}
		out.Successful = append(out.Successful, batchSuccess{Id: id, MessageId: msgID, SequenceNumber: seq})
	}
	return out, nil
}

// mapParam reads a query-protocol map (prefix.N.key / prefix.N.value).
func mapParam(f map[string][]string, prefix, key, value string) map[string]string {
	out := map[string]string{}
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i) + "."
		k, ok := f[p+key]
		if !ok || len(k) == 0 {
			break
		}
		v := ""
		if vs := f[p+value]; len(vs) > 0 {
			v = vs[0]
		}
		out[k[0]] = v
	}
	return out
}

type entry struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type entries []entry

func toEntries(m map[string]string) entries {
	out := make(entries, 0, len(m))
	for k, v := range m {
		out = append(out, entry{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

func (s *Service) writeResult(w http.ResponseWriter, action string, result any) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?>` + "\n")
	enc := xml.NewEncoder(&b)
	resp := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: xmlns}}}
	err := enc.EncodeToken(resp)
	if err == nil && result != nil {
		err = enc.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}})
	}
	if err == nil {
		err = enc.EncodeElement(responseMetadata{RequestID: newID()}, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}})
	}
	if err == nil {
		err = enc.EncodeToken(resp.End())
	}
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Write(b.Bytes())
}

func (s *Service) writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: "InternalError", Status: 500, Message: err.Error()}
	}
	kind := "Sender"
	if e.Status >= 500 {
		kind = "Receiver"
	}
	var msg strings.Builder
	xml.EscapeText(&writer{&msg}, []byte(e.Message))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.Status)
	w.Write([]byte(`<?xml version="1.0"?>` + "\n" + `<ErrorResponse xmlns="` + xmlns + `"><Error><Type>` + kind + `</Type><Code>` + e.Code +
		`</Code><Message>` + msg.String() + `</Message></Error><RequestId>` + newID() + `</RequestId></ErrorResponse>`))
}

type writer struct{ b *strings.Builder }

func (w *writer) Write(p []byte) (int, error) { return w.b.Write(p) }

// number is what SNS accepts as a Number attribute: an integer or decimal, with an
// optional exponent (no NaN, no infinity).
var number = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// checkAttribute validates one message attribute as Publish does, with SNS's wording.
func checkAttribute(name string, a messageAttribute) error {
	base, _, _ := strings.Cut(a.DataType, ".")
	switch {
	case a.DataType == "":
		return attributeError("The message attribute '%s' must contain non-empty message attribute type.", name)
	case base != "String" && base != "Number" && base != "Binary":
		return attributeError("The message attribute '%s' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.", name)
	case base == "Binary" && a.BinaryValue == nil || base != "Binary" && a.StringValue == "":
		return attributeError("The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", name, base)
	case base == "Number" && !number.MatchString(strings.TrimSpace(a.StringValue)):
		return attributeError("Could not cast message attribute '%s' value to number.", name)
	}
	return nil
}

// attributeError is Publish's InvalidParameter for a message attribute, worded as SNS
// words it (without the "Invalid parameter:" prefix of other parameters).
func attributeError(format string, args ...any) *Error {
	return &Error{Code: "InvalidParameter", Status: 400, Message: fmt.Sprintf(format, args...)}
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string {
	return []string{"CreateTopic", "DeleteTopic", "GetSubscriptionAttributes", "GetTopicAttributes", "ListSubscriptions", "ListSubscriptionsByTopic",
		"ListTopics", "Publish", "PublishBatch", "SetSubscriptionAttributes", "SetTopicAttributes", "Subscribe", "Unsubscribe"}
}
