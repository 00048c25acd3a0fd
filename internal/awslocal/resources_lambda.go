package awslocal

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

func (p *Place) functionProvider() cfnlocal.Provider {
	e := p.e
	define := func(r cfnlocal.Resource, strict bool) error {
		timeout := 3 * time.Second // Lambda's default
		if v := text(r.Props["Timeout"]); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				timeout = time.Duration(n) * time.Second
			}
		}
		env := map[string]string{}
		for k, v := range object(object(r.Props["Environment"])["Variables"]) {
			env[k] = text(v)
		}
		code, err := e.functionCode(object(r.Props["Code"]))
		if err != nil && strict {
			return err
		}
		e.defineFunction(r.PhysicalID, timeout, env, code)
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			if e.functionExists(r.PhysicalID) && r.Props["FunctionName"] != nil {
				return "", nil, fmt.Errorf("Function already exist: %s", r.PhysicalID)
			}
			return r.PhysicalID, nil, define(r, true)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, define(r, true)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error { e.removeFunction(r.PhysicalID); return nil },
		// A restart finds the functions as they were, whatever became of their objects.
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return define(r, false) },
	}
}

// FunctionCode is what a function's code is, as Lambda records it when CloudFormation
// creates or updates the function: the S3 object it was read from, or inline (ZipFile) or
// image code, with the size and sha256 (base64, Lambda's CodeSha256) of its bytes.
type FunctionCode struct {
	S3Bucket        string `json:"s3Bucket,omitempty"`
	S3Key           string `json:"s3Key,omitempty"`
	S3ObjectVersion string `json:"s3ObjectVersion,omitempty"`
	ImageURI        string `json:"imageUri,omitempty"`
	CodeSha256      string `json:"codeSha256,omitempty"`
	CodeSize        int64  `json:"codeSize"`
}

// s3Messages are S3's own messages for the errors Lambda relays when it reads code.
var s3Messages = map[string]string{
	"NoSuchKey":     "The specified key does not exist.",
	"NoSuchBucket":  "The specified bucket does not exist",
	"NoSuchVersion": "The specified version does not exist.",
}

// functionCode reads the code a function's Code names, as Lambda does: an S3 object is
// read from the emulator's S3 (where the template's bucket and key must be, as in AWS),
// and a missing one fails in Lambda's words.
func (e *Emulator) functionCode(code map[string]any) (FunctionCode, error) {
	var body []byte
	c := FunctionCode{S3Bucket: text(code["S3Bucket"]), S3Key: text(code["S3Key"]), S3ObjectVersion: text(code["S3ObjectVersion"]), ImageURI: text(code["ImageUri"])}
	switch {
	case c.S3Bucket != "" || c.S3Key != "":
		target := "/" + c.S3Bucket + "/" + (&url.URL{Path: c.S3Key}).EscapedPath()
		if c.S3ObjectVersion != "" {
			target += "?versionId=" + url.QueryEscape(c.S3ObjectVersion)
		}
		req := httptest.NewRequest(http.MethodGet, target, nil)
		w := httptest.NewRecorder()
		e.s3.ServeHTTP(w, req)
		if w.Code/100 != 2 {
			var doc struct{ Code, Message string }
			_ = xml.Unmarshal(w.Body.Bytes(), &doc)
			if m, ok := s3Messages[doc.Code]; ok {
				doc.Message = m
			}
			return c, fmt.Errorf("Error occurred while GetObject. S3 Error Code: %s. S3 Error Message: %s", doc.Code, doc.Message)
		}
		body = w.Body.Bytes()
	case code["ZipFile"] != nil:
		body = []byte(text(code["ZipFile"]))
	default:
		return c, nil
	}
	sum := sha256.Sum256(body)
	c.CodeSha256, c.CodeSize = base64.StdEncoding.EncodeToString(sum[:]), int64(len(body))
	return c, nil
}

// streamSource matches the event sources Lambda reads as streams: DynamoDB tables'
// streams and Kinesis data streams.
var streamSource = regexp.MustCompile(`^arn:aws:(dynamodb:[^:]*:\d{12}:table/[^/]+/stream/.+|kinesis:[^:]*:\d{12}:stream/.+)$`)

// eventSourceMappingProvider makes AWS::Lambda::EventSourceMapping: from an SQS queue, a
// poller invoking the function's in-process handler as Lambda does; from a DynamoDB or
// Kinesis stream (the emulator simulates tables and streams, so no record ever comes), a
// mapping Lambda would accept, checked as Lambda checks it, that invokes nothing.
func (p *Place) eventSourceMappingProvider() cfnlocal.Provider {
	e := p.e
	install := func(r cfnlocal.Resource) error {
		source := text(r.Props["EventSourceArn"])
		fn := functionName(text(r.Props["FunctionName"]))
		if streamSource.MatchString(source) {
			if !e.functionExists(fn) {
				return fmt.Errorf("Function not found: %s", e.functionARN(fn))
			}
			switch pos := text(r.Props["StartingPosition"]); pos {
			case "TRIM_HORIZON", "LATEST", "AT_TIMESTAMP":
			case "":
				return fmt.Errorf("StartingPosition is required for an event source mapping from a stream (%s): TRIM_HORIZON, LATEST or AT_TIMESTAMP", source)
			default:
				return fmt.Errorf("StartingPosition %s is not valid: TRIM_HORIZON, LATEST or AT_TIMESTAMP", pos)
			}
			if v := text(r.Props["BatchSize"]); v != "" {
				if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 10000 {
					return fmt.Errorf("BatchSize %s is not valid for a stream: 1 to 10000", v)
				}
			}
			e.log.Info("event source mapping from a stream recorded: the emulator simulates the stream, so no records come", "source", source, "function", fn)
			return nil
		}
		if source == "" && r.Props["SelfManagedEventSource"] != nil {
			return fmt.Errorf("an event source mapping from a self-managed Apache Kafka cluster (SelfManagedEventSource, no EventSourceArn): the emulator maps SQS queues and (recorded, never invoked) DynamoDB and Kinesis streams only")
		}
		if !strings.HasPrefix(source, "arn:aws:sqs:") {
			return fmt.Errorf("event source %s: the emulator maps SQS queues and (recorded, never invoked) DynamoDB and Kinesis streams only", source)
		}
		if !e.functionExists(fn) {
			return fmt.Errorf("Function not found: %s", e.functionARN(fn))
		}
		o := ESMOptions{}
		if v := text(r.Props["BatchSize"]); v != "" {
			o.BatchSize, _ = strconv.Atoi(v)
		}
		if v := text(r.Props["MaximumBatchingWindowInSeconds"]); v != "" {
			n, _ := strconv.Atoi(v)
			o.MaxBatchingWindow = time.Duration(n) * time.Second
		}
		if sc, ok := r.Props["ScalingConfig"].(map[string]any); ok {
			if v := text(sc["MaximumConcurrency"]); v != "" {
				o.MaxConcurrency, _ = strconv.Atoi(v)
			}
		}
		for _, t := range list(r.Props["FunctionResponseTypes"]) {
			if text(t) == "ReportBatchItemFailures" {
				o.ReportBatchItemFailures = true
			}
		}
		if text(r.Props["Enabled"]) == "false" {
			e.stopMapping(r.PhysicalID)
			return nil
		}
		return e.startMapping(r.PhysicalID, lastSegment(source), fn, o)
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, install(r)
		},
		Delete:  func(_ context.Context, r cfnlocal.Resource) error { e.stopMapping(r.PhysicalID); return nil },
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r) },
	}
}
