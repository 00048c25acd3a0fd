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
		var id string
		id, err = s.publishForm(r, f)
		result = struct{ MessageId string }{id}
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

func (s *Service) publishForm(r *http.Request, f map[string][]string) (string, error) {
	get := func(k string) string {
		if v := f[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	arn := get("TopicArn")
	if arn == "" {
		arn = get("TargetArn")
	}
	if arn == "" {
		return "", invalid("TopicArn or TargetArn Reason: no value for required parameter")
	}
	message := get("Message")
	if get("MessageStructure") == "json" {
		var per map[string]string
		if err := json.Unmarshal([]byte(message), &per); err != nil || per["default"] == "" {
			return "", invalid("Message Structure - No default entry in JSON message body")
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
				return "", invalid("The message attribute '%s' has an invalid binary value", name)
			}
			a.BinaryValue = raw
		}
		if err := checkAttribute(name, a); err != nil {
			return "", err
		}
		attrs[name] = a
	}
	return s.publish(r.Context(), arn, get("Subject"), message, attrs)
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
