package awslocal

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

// s3Do sends one request to the emulated S3 in process, through its handler, so it is
// journaled (persisted) and notifies as a client's request would. It returns the status
// and body, and an error carrying S3's message for anything but 2xx.
func (e *Emulator) s3Do(method, target string, body []byte) ([]byte, error) {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/xml")
	}
	w := httptest.NewRecorder()
	e.s3.ServeHTTP(w, req)
	if w.Code/100 != 2 {
		var doc struct{ Code, Message string }
		_ = xml.Unmarshal(w.Body.Bytes(), &doc)
		if doc.Message == "" {
			doc.Message = strings.TrimSpace(w.Body.String())
		}
		return nil, fmt.Errorf("%s (Service: S3, Status Code: %d, Error Code: %s)", doc.Message, w.Code, doc.Code)
	}
	return w.Body.Bytes(), nil
}

// s3Notification is the S3 API's notification document, built from a template's
// NotificationConfiguration.
type s3Notification struct {
	XMLName xml.Name   `xml:"NotificationConfiguration"`
	Queues  []s3Target `xml:"QueueConfiguration"`
	Topics  []s3Target `xml:"TopicConfiguration"`
	Lambdas []s3Target `xml:"CloudFunctionConfiguration"`
}

type s3Target struct {
	ID       string         `xml:"Id,omitempty"`
	Queue    string         `xml:"Queue,omitempty"`
	Topic    string         `xml:"Topic,omitempty"`
	Function string         `xml:"CloudFunction,omitempty"`
	Events   []string       `xml:"Event"`
	Rules    []s3FilterRule `xml:"Filter>S3Key>FilterRule,omitempty"`
}

type s3FilterRule struct {
	Name  string `xml:"Name"`
	Value string `xml:"Value"`
}

// notificationXML renders a template's NotificationConfiguration for the S3 API.
func notificationXML(bucket string, cfg map[string]any) []byte {
	var doc s3Notification
	for _, kind := range []struct {
		prop, arn string
		into      *[]s3Target
	}{{"QueueConfigurations", "Queue", &doc.Queues}, {"TopicConfigurations", "Topic", &doc.Topics}, {"LambdaConfigurations", "Function", &doc.Lambdas}} {
		for i, c := range list(cfg[kind.prop]) {
			m := object(c)
			t := s3Target{ID: fmt.Sprintf("%s-%s-%d", bucket, kind.arn, i+1), Events: []string{text(m["Event"])}}
			switch kind.arn {
			case "Queue":
				t.Queue = text(m["Queue"])
			case "Topic":
				t.Topic = text(m["Topic"])
			default:
				t.Function = text(m["Function"])
			}
			for _, rule := range list(object(object(m["Filter"])["S3Key"])["Rules"]) {
				rm := object(rule)
				t.Rules = append(t.Rules, s3FilterRule{Name: text(rm["Name"]), Value: text(rm["Value"])})
			}
			*kind.into = append(*kind.into, t)
		}
	}
	b, _ := xml.Marshal(doc)
	return b
}

// notificationProps reads the S3 API's notification document back in the template's shape.
func notificationProps(b []byte) map[string]any {
	var doc s3Notification
	if xml.Unmarshal(b, &doc) != nil {
		return nil
	}
	out := map[string]any{}
	for _, kind := range []struct {
		prop, arn string
		from      []s3Target
	}{{"QueueConfigurations", "Queue", doc.Queues}, {"TopicConfigurations", "Topic", doc.Topics}, {"LambdaConfigurations", "Function", doc.Lambdas}} {
		var l []any
		for _, t := range kind.from {
			for _, ev := range t.Events {
				m := map[string]any{"Event": ev, kind.arn: t.Queue + t.Topic + t.Function}
				if len(t.Rules) > 0 {
					var rules []any
					for _, r := range t.Rules {
						rules = append(rules, map[string]any{"Name": strings.ToLower(r.Name), "Value": r.Value})
					}
					m["Filter"] = map[string]any{"S3Key": map[string]any{"Rules": rules}}
				}
				l = append(l, m)
			}
		}
		if l != nil {
			out[kind.prop] = l
		}
	}
	return out
}

func versioningXML(status string) []byte {
	return []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>` + status + `</Status></VersioningConfiguration>`)
}

func (p *Place) bucketProvider() cfnlocal.Provider {
	e := p.e
	configure := func(name string, props, old map[string]any) error {
		if v, ok := object(props["VersioningConfiguration"])["Status"]; ok {
			if _, err := e.s3Do(http.MethodPut, "/"+name+"?versioning", versioningXML(text(v))); err != nil {
				return err
			}
		} else if old != nil && text(object(old["VersioningConfiguration"])["Status"]) == "Enabled" {
			// Versioning once enabled can only be suspended.
			if _, err := e.s3Do(http.MethodPut, "/"+name+"?versioning", versioningXML("Suspended")); err != nil {
				return err
			}
		}
		nc, has := props["NotificationConfiguration"]
		_, had := old["NotificationConfiguration"]
		if has || had {
			if _, err := e.s3Do(http.MethodPut, "/"+name+"?notification", notificationXML(name, object(nc))); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			name := r.PhysicalID
			if _, err := e.s3Do(http.MethodHead, "/"+name, nil); err == nil {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			if _, err := e.s3Do(http.MethodPut, "/"+name, nil); err != nil {
				return "", nil, err
			}
			return name, nil, configure(name, r.Props, nil)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			return nil, configure(r.PhysicalID, r.Props, old)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			if _, err := e.s3Do(http.MethodHead, "/"+r.PhysicalID, nil); err != nil {
				return nil // already gone
			}
			_, err := e.s3Do(http.MethodDelete, "/"+r.PhysicalID, nil)
			return err
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			if _, err := e.s3Do(http.MethodHead, "/"+r.PhysicalID, nil); err != nil {
				return nil, false, nil
			}
			out := map[string]any{}
			if b, err := e.s3Do(http.MethodGet, "/"+r.PhysicalID+"?versioning", nil); err == nil {
				var v struct{ Status string }
				if xml.Unmarshal(b, &v) == nil && v.Status != "" {
					out["VersioningConfiguration"] = map[string]any{"Status": v.Status}
				}
			}
			if b, err := e.s3Do(http.MethodGet, "/"+r.PhysicalID+"?notification", nil); err == nil {
				out["NotificationConfiguration"] = notificationProps(b)
			}
			return out, true, nil
		},
	}
}

func (p *Place) bucketPolicyProvider() cfnlocal.Provider {
	e := p.e
	put := func(r cfnlocal.Resource) error {
		_, err := e.s3Do(http.MethodPut, "/"+text(r.Props["Bucket"])+"?policy", []byte(text(r.Props["PolicyDocument"])))
		return err
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, put(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			if text(old["Bucket"]) != text(r.Props["Bucket"]) {
				_, _ = e.s3Do(http.MethodDelete, "/"+text(old["Bucket"])+"?policy", nil)
			}
			return nil, put(r)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			_, _ = e.s3Do(http.MethodDelete, "/"+text(r.Props["Bucket"])+"?policy", nil)
			return nil
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			b, err := e.s3Do(http.MethodGet, "/"+text(r.Props["Bucket"])+"?policy", nil)
			if err != nil {
				return nil, false, nil
			}
			return map[string]any{"Bucket": text(r.Props["Bucket"]), "PolicyDocument": asJSON(string(b))}, true, nil
		},
	}
}
