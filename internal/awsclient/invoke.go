package awsclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxInvokeAnswer bounds what a synchronous invocation answers (Lambda's own limit).
const MaxInvokeAnswer = 6 << 20

// Invoker calls a Lambda function synchronously (Invoke, RequestResponse), signed with
// the configuration's credentials and sent through its HTTP client, to its endpoint
// (AWS_ENDPOINT_URL when set). It is the one Lambda call the deployer makes: the SDK's
// Lambda client would add 0.65 MB to a deployer held under 15 MB.
type Invoker struct {
	cfg aws.Config
	// Now is the signing time (default time.Now).
	Now func() time.Time
}

// NewInvoker returns an invoker for cfg.
func NewInvoker(cfg aws.Config) *Invoker { return &Invoker{cfg: cfg, Now: time.Now} }

// FunctionError is a function that ran and failed: Lambda's X-Amz-Function-Error.
type FunctionError struct {
	Function, Kind string
	Payload        []byte
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function %s failed (%s): %.500s", e.Function, e.Kind, e.Payload)
}

// Invoke invokes function with payload and returns its answer. Throttling and server
// errors are tried again, up to MaxAttempts with backoff.
func (v *Invoker) Invoke(ctx context.Context, function string, payload []byte) ([]byte, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var out []byte
		var retry bool
		out, retry, err = v.invoke(ctx, function, payload)
		if err == nil || !retry || attempt >= MaxAttempts {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt*attempt) * 100 * time.Millisecond):
		}
	}
}

func (v *Invoker) invoke(ctx context.Context, function string, payload []byte) ([]byte, bool, error) {
	base := "https://lambda." + v.cfg.Region + ".amazonaws.com"
	if v.cfg.BaseEndpoint != nil {
		base = strings.TrimSuffix(*v.cfg.BaseEndpoint, "/")
	}
	u := base + "/2015-03-31/functions/" + url.PathEscape(function) + "/invocations"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return nil, false, fmt.Errorf("invoke %s: %w", function, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Invocation-Type", "RequestResponse")
	creds, err := v.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("invoke %s: credentials: %w", function, err)
	}
	sum := sha256.Sum256(payload)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", v.cfg.Region, v.Now().UTC()); err != nil {
		return nil, false, fmt.Errorf("invoke %s: sign: %w", function, err)
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("invoke %s: %w", function, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxInvokeAnswer+1))
	if err != nil {
		return nil, true, fmt.Errorf("invoke %s: %w", function, err)
	}
	if resp.StatusCode/100 != 2 {
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return nil, retry, fmt.Errorf("invoke %s: %s: %.500s", function, resp.Status, body)
	}
	if kind := resp.Header.Get("X-Amz-Function-Error"); kind != "" {
		return nil, false, &FunctionError{Function: function, Kind: kind, Payload: body}
	}
	if len(body) > MaxInvokeAnswer {
		return nil, false, fmt.Errorf("invoke %s: the answer is larger than %d bytes", function, MaxInvokeAnswer)
	}
	return body, false, nil
}
