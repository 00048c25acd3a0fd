package s3local

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// notificationConfiguration is the document of Put/GetBucketNotificationConfiguration.
type notificationConfiguration struct {
	XMLName  xml.Name              `xml:"NotificationConfiguration"`
	Xmlns    string                `xml:"xmlns,attr,omitempty"`
	Queues   []queueConfiguration  `xml:"QueueConfiguration"`
	Topics   []topicConfiguration  `xml:"TopicConfiguration"`
	Lambdas  []lambdaConfiguration `xml:"CloudFunctionConfiguration"`
	EventBus *struct{}             `xml:"EventBridgeConfiguration"`
}

type destination struct {
	ID     string   `xml:"Id,omitempty"`
	Events []string `xml:"Event"`
	Filter *filter  `xml:"Filter,omitempty"`
}

type queueConfiguration struct {
	destination
	Queue string `xml:"Queue"`
}

type topicConfiguration struct {
	destination
	Topic string `xml:"Topic"`
}

type lambdaConfiguration struct {
	destination
	Function string `xml:"CloudFunction"`
}

type filter struct {
	Rules []filterRule `xml:"S3Key>FilterRule"`
}

type filterRule struct {
	Name  string `xml:"Name"`
	Value string `xml:"Value"`
}

// matches reports whether an event named eventName (e.g. "ObjectCreated:Put") for key is
// selected by d.
func (d destination) matches(eventName, key string) bool {
	selected := false
	for _, e := range d.Events {
		e = strings.TrimPrefix(e, "s3:")
		if e == eventName || (strings.HasSuffix(e, ":*") && strings.HasPrefix(eventName, strings.TrimSuffix(e, "*"))) {
			selected = true
			break
		}
	}
	if !selected || d.Filter == nil {
		return selected
	}
	for _, rule := range d.Filter.Rules {
		switch strings.ToLower(rule.Name) {
		case "prefix":
			if !strings.HasPrefix(key, rule.Value) {
				return false
			}
		case "suffix":
			if !strings.HasSuffix(key, rule.Value) {
				return false
			}
		}
	}
	return true
}

func (s *Service) serveNotification(w http.ResponseWriter, r *http.Request, bucket string) {
	if exists, _ := s.backend.BucketExists(r.Context(), bucket); !exists {
		writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", bucket)
		return
	}
	switch r.Method {
	case http.MethodGet:
		cfg := s.notif[bucket]
		if cfg == nil {
			cfg = &notificationConfiguration{}
		}
		out := *cfg
		out.Xmlns = "http://s3.amazonaws.com/doc/2006-03-01/"
		body, err := xml.Marshal(out)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalError", err.Error(), bucket)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(xml.Header))
		w.Write(body)
	case http.MethodPut:
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "IncompleteBody", err.Error(), bucket)
			return
		}
		var cfg notificationConfiguration
		if err := xml.Unmarshal(raw, &cfg); err != nil {
			writeError(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema: "+err.Error(), bucket)
			return
		}
		if err := s.validate(&cfg); err != nil {
			writeError(w, http.StatusBadRequest, err.code, err.message, bucket, err.elements()...)
			return
		}
		cfg.Xmlns = ""
		s.notif[bucket] = &cfg
		w.WriteHeader(http.StatusOK)
	default:
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.", bucket)
	}
}

// eventNames are the event types S3 notifications accept.
var eventNames = map[string]bool{}

func init() {
	for family, kinds := range map[string][]string{
		"ObjectCreated":       {"*", "Put", "Post", "Copy", "CompleteMultipartUpload"},
		"ObjectRemoved":       {"*", "Delete", "DeleteMarkerCreated"},
		"ObjectRestore":       {"*", "Post", "Completed", "Delete"},
		"Replication":         {"*", "OperationFailedReplication", "OperationMissedThreshold", "OperationReplicatedAfterThreshold", "OperationNotTracked"},
		"LifecycleExpiration": {"*", "Delete", "DeleteMarkerCreated"},
		"ObjectTagging":       {"*", "Put", "Delete"},
		"ObjectAcl":           {"Put"},
	} {
		for _, k := range kinds {
			eventNames["s3:"+family+":"+k] = true
		}
	}
	for _, e := range []string{"s3:ReducedRedundancyLostObject", "s3:LifecycleTransition", "s3:IntelligentTiering"} {
		eventNames[e] = true
	}
}

// supportedEvents lists the event names as S3's error message does: sorted and quoted.
func supportedEvents() string {
	names := make([]string, 0, len(eventNames))
	for n := range eventNames {
		names = append(names, "'"+n+"'")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// configError is an InvalidArgument answer, with S3's ArgumentNameN/ArgumentValueN pairs.
type configError struct {
	code, message string
	args          [][2]string
}

// elements renders the arguments: one as ArgumentName/ArgumentValue, several numbered.
func (e *configError) elements() [][2]string {
	var out [][2]string
	for i, a := range e.args {
		n := strconv.Itoa(i + 1)
		if len(e.args) == 1 && !strings.HasPrefix(a[0], "arn:") {
			n = ""
		}
		out = append(out, [2]string{"ArgumentName" + n, a[0]}, [2]string{"ArgumentValue" + n, a[1]})
	}
	return out
}

func invalidArgument(message string, args ...[2]string) *configError {
	return &configError{code: "InvalidArgument", message: message, args: args}
}

// validate checks a notification configuration as S3 does before storing it: well-formed
// ARNs, known event names, prefix and suffix filters, and destinations that exist (S3 sends
// each a test event, which fails for a missing queue or topic).
func (s *Service) validate(cfg *notificationConfiguration) *configError {
	type dest struct {
		d       destination
		arn     string
		service string // sqs, sns, lambda
		kind    string // how S3 names it
		exists  func(string) bool
	}
	var all []dest
	for _, q := range cfg.Queues {
		all = append(all, dest{q.destination, q.Queue, "sqs", "queue", s.opts.QueueExists})
	}
	for _, t := range cfg.Topics {
		all = append(all, dest{t.destination, t.Topic, "sns", "topic", s.opts.TopicExists})
	}
	for _, l := range cfg.Lambdas {
		all = append(all, dest{l.destination, l.Function, "lambda", "Lambda", s.opts.FunctionExists})
	}
	var missing [][2]string
	for _, x := range all {
		if !strings.HasPrefix(x.arn, "arn:aws:"+x.service+":") {
			return invalidArgument("The ARN is not well formed", [2]string{"ARN", x.arn})
		}
		if len(x.d.Events) == 0 {
			return invalidArgument("A specified event is not supported for notifications.")
		}
		for _, e := range x.d.Events {
			if !eventNames[e] {
				return invalidArgument(fmt.Sprintf("The event '%s' is not supported for notifications. Supported events are as follows: [%s]", e, supportedEvents()), [2]string{"Event", e})
			}
		}
		if x.d.Filter != nil {
			seen := map[string]bool{}
			for _, rule := range x.d.Filter.Rules {
				n := strings.ToLower(rule.Name)
				if n != "prefix" && n != "suffix" {
					return invalidArgument("filter rule name must be either prefix or suffix", [2]string{"FilterRule", rule.Name})
				}
				if seen[n] {
					return invalidArgument("Cannot specify more than one "+n+" rule in a filter.", [2]string{"FilterRule", rule.Name})
				}
				seen[n] = true
			}
		}
		if x.exists != nil && !s.replaying && !x.exists(x.arn) {
			missing = append(missing, [2]string{x.arn, "The destination " + x.kind + " does not exist"})
		}
	}
	if len(missing) > 0 {
		return invalidArgument("Unable to validate the following destination configurations", missing...)
	}
	return nil
}

// delivery is one message to send once the request's lock is released.
type delivery struct {
	queue, topic, function string
	body                   string
}

// events works out the notifications a successful mutating request r causes.
func (s *Service) events(r *http.Request, rec *capture) []delivery {
	if s.replaying {
		return nil
	}
	bucket, key := splitPath(r.URL.Path)
	if bucket == "" {
		return nil
	}
	q := r.URL.Query()
	q.Del("x-id") // the SDK names the operation in the query
	if _, ok := q["notification"]; ok && key == "" && r.Method == http.MethodPut {
		return s.testEvents(bucket)
	}
	cfg := s.notif[bucket]
	if cfg == nil || key == "" {
		return nil
	}
	name := ""
	switch {
	case r.Method == http.MethodPut && len(q) == 0 && r.Header.Get("X-Amz-Copy-Source") != "":
		name = "ObjectCreated:Copy"
	case r.Method == http.MethodPut && len(q) == 0:
		name = "ObjectCreated:Put"
	case r.Method == http.MethodPost && q.Get("uploadId") != "":
		name = "ObjectCreated:CompleteMultipartUpload"
	case r.Method == http.MethodDelete && len(q) == 0:
		name = "ObjectRemoved:Delete"
		if rec.Header().Get("X-Amz-Delete-Marker") == "true" {
			name = "ObjectRemoved:DeleteMarkerCreated"
		}
	case r.Method == http.MethodDelete && q.Get("versionId") != "" && len(q) == 1:
		name = "ObjectRemoved:Delete"
	default:
		return nil
	}
	obj := eventObject{Key: encodeKey(key), VersionID: rec.Header().Get("X-Amz-Version-Id"), Sequencer: s.nextSequencer()}
	if strings.HasPrefix(name, "ObjectCreated:") {
		if head, err := s.backend.HeadObject(r.Context(), bucket, key); err == nil {
			head.Contents.Close()
			size := head.Size
			obj.Size = &size
			obj.ETag = hex.EncodeToString(head.Hash)
			if obj.VersionID == "" && head.VersionID != "" {
				obj.VersionID = string(head.VersionID)
			}
		}
	} else if v := q.Get("versionId"); v != "" && obj.VersionID == "" {
		obj.VersionID = v
	}
	var out []delivery
	for _, d := range cfg.Queues {
		if d.matches(name, key) {
			out = append(out, delivery{queue: d.Queue, body: s.eventJSON(r, bucket, name, d.ID, obj)})
		}
	}
	for _, d := range cfg.Topics {
		if d.matches(name, key) {
			out = append(out, delivery{topic: d.Topic, body: s.eventJSON(r, bucket, name, d.ID, obj)})
		}
	}
	for _, d := range cfg.Lambdas {
		if d.matches(name, key) {
			out = append(out, delivery{function: d.Function, body: s.eventJSON(r, bucket, name, d.ID, obj)})
		}
	}
	return out
}

// testEvents are the s3:TestEvent messages S3 sends each destination when a notification
// configuration is stored.
func (s *Service) testEvents(bucket string) []delivery {
	cfg := s.notif[bucket]
	if cfg == nil {
		return nil
	}
	body, _ := json.Marshal(map[string]string{
		"Service":   "Amazon S3",
		"Event":     "s3:TestEvent",
		"Time":      s.now.UTC().Format("2006-01-02T15:04:05.000Z"),
		"Bucket":    bucket,
		"RequestId": s.requestID(),
		"HostId":    "cairn-local",
	})
	var out []delivery
	seen := map[string]bool{}
	for _, d := range cfg.Queues {
		if !seen[d.Queue] {
			seen[d.Queue] = true
			out = append(out, delivery{queue: d.Queue, body: string(body)})
		}
	}
	for _, d := range cfg.Topics {
		if !seen[d.Topic] {
			seen[d.Topic] = true
			out = append(out, delivery{topic: d.Topic, body: string(body)})
		}
	}
	return out
}

func (s *Service) deliver(ctx context.Context, d delivery) {
	ctx = context.WithoutCancel(ctx)
	var err error
	switch {
	case d.queue != "" && s.opts.Notify != nil:
		err = s.opts.Notify(ctx, d.queue, d.body)
	case d.topic != "" && s.opts.Publish != nil:
		err = s.opts.Publish(ctx, d.topic, "Amazon S3 Notification", d.body)
	case d.function != "" && s.opts.Invoke != nil:
		err = s.opts.Invoke(ctx, d.function, []byte(d.body))
	}
	if err != nil {
		s.opts.Logger.Error("s3 emulator: bucket notification not delivered", "queue", d.queue, "topic", d.topic, "function", d.function, "err", err)
	}
}

// nextSequencer returns a hexadecimal value that grows with every event, as S3's sequencer
// does for events on one key.
func (s *Service) nextSequencer() string {
	n := uint64(s.now.UnixNano())
	if n <= s.sequencer {
		n = s.sequencer + 1
	}
	s.sequencer = n
	return strings.ToUpper(strconv.FormatUint(n, 16))
}

func (s *Service) requestID() string {
	return strings.ToUpper(strconv.FormatUint(s.sequencer+uint64(s.now.UnixNano()), 16))
}

// encodeKey encodes an object key as S3 does in event records: form encoding, slashes kept.
func encodeKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}

// The event record types reproduce S3's JSON exactly (events.S3Event adds fields S3 does not
// send, so it cannot be used for writing).
type eventObject struct {
	Key       string `json:"key"`
	Size      *int64 `json:"size,omitempty"`
	ETag      string `json:"eTag,omitempty"`
	VersionID string `json:"versionId,omitempty"`
	Sequencer string `json:"sequencer"`
}

type principal struct {
	PrincipalID string `json:"principalId"`
}

type eventRecord struct {
	EventVersion      string            `json:"eventVersion"`
	EventSource       string            `json:"eventSource"`
	AWSRegion         string            `json:"awsRegion"`
	EventTime         string            `json:"eventTime"`
	EventName         string            `json:"eventName"`
	UserIdentity      principal         `json:"userIdentity"`
	RequestParameters map[string]string `json:"requestParameters"`
	ResponseElements  map[string]string `json:"responseElements"`
	S3                struct {
		SchemaVersion   string `json:"s3SchemaVersion"`
		ConfigurationID string `json:"configurationId"`
		Bucket          struct {
			Name          string    `json:"name"`
			OwnerIdentity principal `json:"ownerIdentity"`
			ARN           string    `json:"arn"`
		} `json:"bucket"`
		Object eventObject `json:"object"`
	} `json:"s3"`
}

func (s *Service) eventJSON(r *http.Request, bucket, name, configID string, obj eventObject) string {
	rec := eventRecord{
		EventVersion:      "2.1",
		EventSource:       "aws:s3",
		AWSRegion:         s.opts.Region,
		EventTime:         s.now.UTC().Format("2006-01-02T15:04:05.000Z"),
		EventName:         name,
		UserIdentity:      principal{"AWS:AIDACAIRNLOCAL"},
		RequestParameters: map[string]string{"sourceIPAddress": sourceIP(r)},
		ResponseElements:  map[string]string{"x-amz-request-id": s.requestID(), "x-amz-id-2": "cairn-local/" + obj.Sequencer},
	}
	rec.S3.SchemaVersion = "1.0"
	rec.S3.ConfigurationID = configID
	rec.S3.Bucket.Name = bucket
	rec.S3.Bucket.OwnerIdentity = principal{"A3CAIRNLOCAL"}
	rec.S3.Bucket.ARN = "arn:aws:s3:::" + bucket
	rec.S3.Object = obj
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string][]eventRecord{"Records": {rec}})
	return strings.TrimSpace(b.String())
}

func sourceIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = strings.Trim(host[:i], "[]")
	}
	if host == "" {
		return "127.0.0.1"
	}
	return host
}

// Operation names the S3 API operation a request calls (e.g. "PutObject"), for call counts
// and fault injection.
func Operation(r *http.Request) string {
	bucket, key := splitPath(r.URL.Path)
	q := r.URL.Query()
	has := func(k string) bool { _, ok := q[k]; return ok }
	m := r.Method
	if bucket == "" {
		return "ListBuckets"
	}
	if key == "" {
		for _, sub := range []struct{ q, get, put, del string }{
			{"versioning", "GetBucketVersioning", "PutBucketVersioning", ""},
			{"notification", "GetBucketNotificationConfiguration", "PutBucketNotificationConfiguration", ""},
			{"tagging", "GetBucketTagging", "PutBucketTagging", "DeleteBucketTagging"},
			{"policy", "GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy"},
			{"cors", "GetBucketCors", "PutBucketCors", "DeleteBucketCors"},
			{"object-lock", "GetObjectLockConfiguration", "PutObjectLockConfiguration", ""},
			{"lifecycle", "GetBucketLifecycleConfiguration", "PutBucketLifecycleConfiguration", "DeleteBucketLifecycle"},
			{"encryption", "GetBucketEncryption", "PutBucketEncryption", "DeleteBucketEncryption"},
			{"publicAccessBlock", "GetPublicAccessBlock", "PutPublicAccessBlock", "DeletePublicAccessBlock"},
			{"acl", "GetBucketAcl", "PutBucketAcl", ""},
			{"location", "GetBucketLocation", "", ""},
			{"versions", "ListObjectVersions", "", ""},
			{"uploads", "ListMultipartUploads", "", ""},
		} {
			if !has(sub.q) {
				continue
			}
			switch m {
			case http.MethodGet:
				return sub.get
			case http.MethodPut:
				return sub.put
			case http.MethodDelete:
				return sub.del
			}
		}
		switch m {
		case http.MethodPut:
			return "CreateBucket"
		case http.MethodDelete:
			return "DeleteBucket"
		case http.MethodHead:
			return "HeadBucket"
		case http.MethodPost:
			if has("delete") {
				return "DeleteObjects"
			}
			return "PostObject"
		case http.MethodGet:
			if q.Get("list-type") == "2" {
				return "ListObjectsV2"
			}
			return "ListObjects"
		}
		return m + "Bucket"
	}
	switch {
	case has("tagging"):
		return map[string]string{http.MethodGet: "GetObjectTagging", http.MethodPut: "PutObjectTagging", http.MethodDelete: "DeleteObjectTagging"}[m]
	case has("uploads") && m == http.MethodPost:
		return "CreateMultipartUpload"
	case has("uploadId"):
		switch m {
		case http.MethodPut:
			if r.Header.Get("X-Amz-Copy-Source") != "" {
				return "UploadPartCopy"
			}
			return "UploadPart"
		case http.MethodPost:
			return "CompleteMultipartUpload"
		case http.MethodDelete:
			return "AbortMultipartUpload"
		case http.MethodGet:
			return "ListParts"
		}
	case has("attributes"):
		return "GetObjectAttributes"
	case has("acl"):
		return map[string]string{http.MethodGet: "GetObjectAcl", http.MethodPut: "PutObjectAcl"}[m]
	}
	switch m {
	case http.MethodGet:
		return "GetObject"
	case http.MethodHead:
		return "HeadObject"
	case http.MethodPut:
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return "CopyObject"
		}
		return "PutObject"
	case http.MethodDelete:
		return "DeleteObject"
	}
	return m + "Object"
}

// Operations lists the S3 operations this emulator serves (gofakes3's and its own), sorted.
func Operations() []string {
	return []string{"AbortMultipartUpload", "CompleteMultipartUpload", "CopyObject", "CreateBucket", "CreateMultipartUpload", "DeleteBucket",
		"DeleteBucketCors", "DeleteBucketPolicy", "DeleteObject", "DeleteObjectTagging", "DeleteObjects", "GetBucketCors", "GetBucketLocation",
		"GetBucketNotificationConfiguration", "GetBucketPolicy", "GetBucketVersioning", "GetObject", "GetObjectAttributes",
		"GetObjectLockConfiguration", "GetObjectTagging", "HeadBucket", "HeadObject", "ListBuckets", "ListMultipartUploads",
		"ListObjectVersions", "ListObjects", "ListObjectsV2", "ListParts", "PutBucketCors", "PutBucketNotificationConfiguration",
		"PutBucketPolicy", "PutBucketVersioning", "PutObject", "PutObjectLockConfiguration", "PutObjectTagging", "UploadPart", "UploadPartCopy"}
}
