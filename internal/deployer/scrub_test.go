package deployer

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
)

// TestScrubResourceEvents: what CloudFormation says of a stack's resources passes the
// step's scrubber with its other texts: a reason or a physical id quoting a secret holds
// it as ****; when the stack's secrets cannot be read, the events are kept (resource,
// type, status, time) with their texts withheld, in short, and the stack's own reason
// says why.
func TestScrubResourceEvents(t *testing.T) {
	const secret = "hunter2-Secret"
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	events := func() []run.ResourceEvent {
		return []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "/app/" + secret, Status: "CREATE_FAILED", Reason: "Value " + secret + " is invalid", Time: at.Add(time.Second)},
		}
	}
	for _, tc := range []struct {
		name       string
		learnt     error
		reason     string
		wantEvents []run.ResourceEvent
	}{
		{"secrets read", nil, "Parameter (AWS::SSM::Parameter): Value **** is invalid", []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "/app/****", Status: "CREATE_FAILED", Reason: "Value **** is invalid", Time: at.Add(time.Second)},
		}},
		{"secrets unreadable", errors.New("download the bundle: gone"), "(withheld: the stack holds secrets, which could not be read to mask them in this text: download the bundle: gone; see the stack's events in CloudFormation)", []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "(withheld: the stack's secrets could not be read to mask it)", Status: "CREATE_FAILED", Reason: "(withheld: the stack's secrets could not be read to mask it)", Time: at.Add(time.Second)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &seal.Scrubber{}
			sc.Add(secret)
			x := &secrets{sc: sc, learnt: map[string]error{"app": tc.learnt}} // as learn left them
			o := run.Observation{Stack: "app", StackStatus: "ROLLBACK_COMPLETE", Reason: "Parameter (AWS::SSM::Parameter): Value " + secret + " is invalid", Events: events()}
			x.scrub(&run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app"}}}, []*run.Observation{&o}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if o.Reason != tc.reason {
				t.Errorf("reason %q, want %q", o.Reason, tc.reason)
			}
			if !slices.Equal(o.Events, tc.wantEvents) {
				t.Errorf("events\n got %+v\nwant %+v", o.Events, tc.wantEvents)
			}
			for _, e := range o.Events {
				if strings.Contains(e.Reason+e.PhysicalID, secret) {
					t.Errorf("an event holds the secret: %+v", e)
				}
			}
		})
	}
}

// TestNoEchoRecoveredFromTheRun: the NoEcho values an apply run holds by hash (as its
// plan stored them) are resolved again from what the run recorded, each alone; a value
// comes back only when its hash is the stored one; one that does not is named, with why,
// and never shown.
func TestNoEchoRecoveredFromTheRun(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:shop-db-AbCdEf"
	key := seal.NewKey("k1", []byte("0123456789abcdef0123456789abcdef"))
	lookups := map[string][]config.Lookup{"service": {
		{Kind: config.KindOutput, Stack: "database", StackName: "shop-database", Output: "SecretArn", Param: "DatabaseSecretArn"},
		{Kind: config.KindOutput, Stack: "cache", StackName: "shop-cache", Output: "Token", Param: "CacheToken"},
	}}
	raw := map[string]string{"DatabaseSecretArn": "${output database::SecretArn}", "CacheToken": "${output cache::Token}", "Image": "nginx:1.28"}
	stored := map[string]string{
		"DatabaseSecretArn": config.SealNoEcho(key, "service", "DatabaseSecretArn", arn),
		"CacheToken":        config.SealNoEcho(key, "service", "CacheToken", "tok-1"),
		"Image":             "nginx:1.28",
	}
	for _, tc := range []struct {
		name      string
		database  map[string]string // database's outputs as the run knows them
		cache     map[string]string // cache's
		recovered map[string]string
		err       string
		unwritten string // a parameter the run keeps no raw value of
	}{
		{"every value", map[string]string{"SecretArn": arn}, map[string]string{"Token": "tok-1"},
			map[string]string{"DatabaseSecretArn": arn, "CacheToken": "tok-1", "Image": "nginx:1.28"}, "", ""},
		{"a producer's output gone", map[string]string{"SecretArn": arn}, map[string]string{},
			map[string]string{"DatabaseSecretArn": arn, "CacheToken": stored["CacheToken"], "Image": "nginx:1.28"},
			"stack service: the NoEcho values the run keeps as hashes only could not be read again (stack service: parameter CacheToken: ${output cache::Token}: stack shop-cache has no output Token yet: deploy cache first)", ""},
		{"a value changed", map[string]string{"SecretArn": arn + "-2"}, map[string]string{"Token": "tok-1"},
			map[string]string{"DatabaseSecretArn": stored["DatabaseSecretArn"], "CacheToken": "tok-1", "Image": "nginx:1.28"},
			"stack service: the NoEcho values the run keeps as hashes only could not be read again (parameter DatabaseSecretArn resolves to another value than the run deployed)", ""},
		{"no value as written", map[string]string{"SecretArn": arn}, map[string]string{"Token": "tok-1"},
			map[string]string{"DatabaseSecretArn": arn, "CacheToken": stored["CacheToken"], "Image": "nginx:1.28"},
			"stack service: the NoEcho values the run keeps as hashes only could not be read again (parameter CacheToken: the run keeps no value of it as written to resolve again)", "CacheToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := maps.Clone(raw)
			delete(raw, tc.unwritten)
			r := &run.Run{Stacks: map[string]*run.Stack{
				"database": {Name: "database", StackName: "shop-database", Outputs: tc.database},
				"cache":    {Name: "cache", StackName: "shop-cache", Outputs: tc.cache},
				"service": {Name: "service", StackName: "shop-service", NoEcho: []string{"CacheToken", "DatabaseSecretArn"},
					RawParameters: raw, Parameters: stored},
			}}
			s := r.Stacks["service"]
			candidates, unresolved := resolveNoEcho(r, s, &rundoc.Document{Lookups: lookups})
			got, lost := config.RecoverNoEcho(key, "service", s.Parameters, candidates)
			err := notRecovered("service", lost, unresolved)
			if !maps.Equal(got, tc.recovered) {
				t.Errorf("recovered %v, want %v", got, tc.recovered)
			}
			if msg := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && msg != tc.err) {
				t.Errorf("error %q, want %q", msg, tc.err)
			}
			if strings.Contains(fmt.Sprint(err), arn) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}
