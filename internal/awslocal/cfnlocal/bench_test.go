package cfnlocal

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// BenchmarkSimulate200Stacks creates, updates and deletes 200 stacks of four resources
// each through the SDK on a virtual clock; virtual hours pass in real milliseconds.
func BenchmarkSimulate200Stacks(b *testing.B) {
	body := readFixture(b, "network.yaml")
	ctx := context.Background()
	for b.Loop() {
		e := newEnv(b, nil)
		start := time.Now()
		for i := range 200 {
			e.create(fmt.Sprintf("s%03d", i), body, nil)
		}
		e.clk.Advance(time.Hour)
		for i := range 200 {
			if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String(fmt.Sprintf("s%03d", i)),
				UsePreviousTemplate: aws.Bool(true), Parameters: sdkParams(map[string]string{"Env": "prod"})}); err != nil {
				b.Fatal(err)
			}
		}
		e.clk.Advance(time.Hour)
		for i := range 200 {
			if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(fmt.Sprintf("s%03d", i))}); err != nil {
				b.Fatal(err)
			}
		}
		e.clk.Advance(time.Hour)
		out, err := e.cfn.ListStacks(ctx, &cloudformation.ListStacksInput{StackStatusFilter: []types.StackStatus{types.StackStatusDeleteComplete}})
		if err != nil {
			b.Fatal(err)
		}
		n := len(out.StackSummaries)
		for out.NextToken != nil {
			out, err = e.cfn.ListStacks(ctx, &cloudformation.ListStacksInput{NextToken: out.NextToken, StackStatusFilter: []types.StackStatus{types.StackStatusDeleteComplete}})
			if err != nil {
				b.Fatal(err)
			}
			n += len(out.StackSummaries)
		}
		if n != 200 {
			b.Fatalf("%d stacks deleted, want 200", n)
		}
		b.Logf("200 stacks created, updated and deleted (3 virtual hours) in %v", time.Since(start))
	}
}
