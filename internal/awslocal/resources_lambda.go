package awslocal

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

func (p *Place) functionProvider() cfnlocal.Provider {
	e := p.e
	define := func(r cfnlocal.Resource) {
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
		e.defineFunction(r.PhysicalID, timeout, env)
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			if e.functionExists(r.PhysicalID) && r.Props["FunctionName"] != nil {
				return "", nil, fmt.Errorf("Function already exist: %s", r.PhysicalID)
			}
			define(r)
			return r.PhysicalID, nil, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			define(r)
			return nil, nil
		},
		Delete:  func(_ context.Context, r cfnlocal.Resource) error { e.removeFunction(r.PhysicalID); return nil },
		Restore: func(_ context.Context, r cfnlocal.Resource) error { define(r); return nil },
	}
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
