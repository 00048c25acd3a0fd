package awsclient

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// lateConn holds the Write that sends a request's body until the answer has begun to
// arrive, and a moment more: the order a loaded machine now and then gives, in which
// net/http reads the body once more after the SDK closed it.
type lateConn struct {
	net.Conn
	writes    int // writeLoop's alone
	answered  chan struct{}
	onceRead  sync.Once
	holdAfter time.Duration
}

func (c *lateConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.onceRead.Do(func() { close(c.answered) })
	}
	return n, err
}

func (c *lateConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.writes++
	if c.writes == 2 { // the body: net/http flushes the headers first, then sends it whole
		select {
		case <-c.answered:
		case <-time.After(5 * time.Second):
		}
		time.Sleep(c.holdAfter) // the SDK closes the request body as the answer's headers arrive
	}
	return n, err
}

// TestSafeBodies reproduces the race SafeBodies exists for, in the order that loses an
// answer: the server answers as soon as it has the body, the SDK closes the request body,
// and only then does net/http read the body once more. Without SafeBodies the answer's
// connection is closed while it is read; with it the answer arrives whole. Should the
// case without it ever succeed, the SDK fixed its side and SafeBodies can go.
func TestSafeBodies(t *testing.T) {
	var members strings.Builder
	for i := range 200 {
		fmt.Fprintf(&members, "<member><StackName>s%03d</StackName><StackId>arn:aws:cloudformation:us-east-1:123456789012:stack/s%03d/x</StackId><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-12-01T00:00:00Z</CreationTime></member>", i, i)
	}
	answer := `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks>` +
		members.String() + `</Stacks></DescribeStacksResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeStacksResponse>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, answer[:len(answer)/2])
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // the rest comes once the client has had time to close its connection
		_, _ = io.WriteString(w, answer[len(answer)/2:])
	}))
	t.Cleanup(srv.Close)

	// The product's configurations, as the Lambda functions (FromEnvironment) and the CLI and
	// `cairn local up` (Load) make them, against the SDK's alone.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	for _, tc := range []struct {
		name   string
		config func() (aws.Config, error)
		safe   bool
	}{
		{"the SDK alone", func() (aws.Config, error) {
			return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}, nil
		}, false},
		{"FromEnvironment, the functions'", FromEnvironment, true},
		{"Load, the CLI's", func() (aws.Config, error) { return Load(context.Background()) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.config()
			if err != nil {
				t.Fatal(err)
			}
			cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &lateConn{Conn: c, answered: make(chan struct{}), holdAfter: 100 * time.Millisecond}, nil
				}
			})
			cfg.Retryer, cfg.RetryMaxAttempts = nil, 1 // one attempt: a lost answer is not asked again
			out, err := cloudformation.NewFromConfig(cfg).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String("s000")})
			switch {
			case tc.safe && (err != nil || len(out.Stacks) != 200):
				t.Fatalf("%v (%d stacks)", err, len(stacks(out)))
			case !tc.safe && (err == nil || !strings.Contains(err.Error(), "use of closed network connection")):
				t.Fatalf("the race did not lose the answer (err %v): the SDK may have fixed its side; SafeBodies can go", err)
			}
		})
	}
}

func stacks(out *cloudformation.DescribeStacksOutput) []string {
	if out == nil {
		return nil
	}
	var names []string
	for _, s := range out.Stacks {
		names = append(names, aws.ToString(s.StackName))
	}
	return names
}
