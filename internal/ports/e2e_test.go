package ports_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/customresource"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/ports"
)

// TestEndToEnd runs Custom::PortAllocation as in AWS, through the emulator's wiring only:
// CloudFormation publishes each request to the topic exported as cairn-ports-service-token,
// SNS delivers it to the ports queue, the event source mapping invokes the ports function,
// which answers through the ResponseURL, and the stack completes.
func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	// The ports function as `cairn local up` runs it, bound to the stack's queue.
	l, err := localcairn.Start(ctx, localcairn.StartOptions{
		Emulator: awslocal.Options{Logger: slog.New(slog.DiscardHandler), CloudFormation: awslocal.CloudFormationTimings{
			ResourceDelay: 10 * time.Millisecond, ChangeSetDelay: 10 * time.Millisecond, CustomResourceTimeout: 30 * time.Second,
		}},
		Options: localcairn.Options{PortPools: "default=20000-20099"},
		Handlers: func(ctx context.Context, l *localcairn.Local) (localcairn.Handlers, error) {
			cfg, err := l.Emulator.AWSConfig(ctx)
			if err != nil {
				return localcairn.Handlers{}, err
			}
			pools, err := ports.ParsePools(l.Cairn.PortPools)
			if err != nil {
				return localcairn.Handlers{}, err
			}
			h, err := ports.NewHandler(awsclient.S3(cfg), ports.Config{Bucket: l.Cairn.Bucket, Pools: pools,
				Handler: customresource.Options{AllowedHosts: []string{l.Cairn.ResponseHosts}, Logger: slog.New(slog.DiscardHandler)}})
			if err != nil {
				return localcairn.Handlers{}, err
			}
			return localcairn.Handlers{Ports: h.HandleSQS}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, c := l.Emulator, l.Cairn
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	cf := cloudformation.NewFromConfig(cfg)
	store := ports.NewStore(s3c, c.Bucket, nil)
	template, err := os.ReadFile("testdata/two-ports.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const name = "shop-ports"

	out, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(template))})
	if err != nil {
		t.Fatal(err)
	}
	stackID := aws.ToString(out.StackId)
	created := waitStack(t, cf, name, cfntypes.StackStatusCreateComplete)
	web, admin := created["WebPort"], strings.Split(created["AdminPorts"], ",")
	if len(admin) != 2 || web == "" || web == admin[0] || web == admin[1] || admin[0] == admin[1] {
		t.Fatalf("outputs %v: want WebPort and two AdminPorts, all distinct", created)
	}
	first, _ := strconv.Atoi(admin[0])
	if second, _ := strconv.Atoi(admin[1]); second != first+1 {
		t.Fatalf("AdminPorts %v are not a contiguous block of 2", admin)
	}
	allocs := poolAllocations(t, store)
	if len(allocs) != 2 {
		t.Fatalf("pool default holds %d allocations, want 2: %+v", len(allocs), allocs)
	}
	for _, a := range allocs {
		if a.StackID != stackID {
			t.Fatalf("allocation %s is owned by %s, want the stack %s", a.ID, a.StackID, stackID)
		}
	}

	// An update that changes the resources' properties but neither Pool nor Count keeps
	// the ports and the allocations.
	updated := strings.ReplaceAll(string(template), "      Pool: default\n", "      Pool: default\n      Preferred: 20090\n")
	if updated == string(template) {
		t.Fatal("testdata/two-ports.yaml changed: the test no longer updates the resources")
	}
	if _, err := cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String(name), TemplateBody: aws.String(updated)}); err != nil {
		t.Fatal(err)
	}
	after := waitStack(t, cf, name, cfntypes.StackStatusUpdateComplete)
	for _, k := range []string{"WebPort", "AdminPorts", "WebAllocation"} {
		if after[k] != created[k] {
			t.Errorf("output %s changed on an update keeping Pool and Count: %s, was %s", k, after[k], created[k])
		}
	}
	if evs := stackEvents(cf, name); !strings.Contains(evs, "WebPort UPDATE_COMPLETE") || !strings.Contains(evs, "AdminPorts UPDATE_COMPLETE") {
		t.Fatalf("the custom resources were not updated; events:\n%s", evs)
	}
	if got := poolAllocations(t, store); len(got) != 2 {
		t.Fatalf("pool holds %d allocations after the update, want the same 2: %+v", len(got), got)
	}

	// Deleting the stack frees both.
	if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, cf, stackID, cfntypes.StackStatusDeleteComplete)
	if got := poolAllocations(t, store); len(got) != 0 {
		t.Fatalf("pool still holds %+v after the stack was deleted", got)
	}
}

func poolAllocations(t *testing.T, store *ports.Store) []ports.Allocation {
	t.Helper()
	allocs, err := store.Allocations(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	return allocs
}

// waitStack polls the stack until it settles and fails unless it settled in want; it
// returns the stack's outputs.
func waitStack(t *testing.T, cf *cloudformation.Client, stack string, want cfntypes.StackStatus) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Stacks[0]
		if strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") {
			if time.Now().After(deadline) {
				t.Fatalf("stack %s still %s after a minute", stack, st.StackStatus)
			}
			continue
		}
		if st.StackStatus != want {
			t.Fatalf("stack %s is %s (%s), want %s; events:\n%s", stack, st.StackStatus, aws.ToString(st.StackStatusReason), want, stackEvents(cf, stack))
		}
		outputs := map[string]string{}
		for _, o := range st.Outputs {
			outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
		return outputs
	}
}

func stackEvents(cf *cloudformation.Client, stack string) string {
	out, err := cf.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, ev := range out.StackEvents {
		b.WriteString("  " + aws.ToString(ev.LogicalResourceId) + " " + string(ev.ResourceStatus) + " " + aws.ToString(ev.ResourceStatusReason) + "\n")
	}
	return b.String()
}
