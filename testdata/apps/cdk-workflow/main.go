// Command cdk-workflow is a small CDK app of cairn's own, kept with the cloud assembly the
// real CDK CLI synthesized from it (cdk.out): one stack, WorkflowStack, holding a Python
// function whose code is a file asset (lambda/check) and a Step Functions state machine
// that calls it, with the state machine's ARN as an output. cairn's tests deploy the kept
// cdk.out (TestRealApps, TestRealCDKCLIAgainstLocalUp), so they need no Node; to
// synthesize it again: cdk synth here (cdk.json runs `go run .`).
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("WorkflowStack"), &awscdk.StackProps{
		Description: jsii.String("cairn's sample workflow: a state machine checking an order with a function"),
	})

	check := awslambda.NewFunction(stack, jsii.String("CheckOrder"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PYTHON_3_12(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromAsset(jsii.String("lambda/check"), nil),
		Timeout: awscdk.Duration_Seconds(jsii.Number(10)),
	})

	invoke := awsstepfunctionstasks.NewLambdaInvoke(stack, jsii.String("Check"), &awsstepfunctionstasks.LambdaInvokeProps{
		LambdaFunction: check,
		OutputPath:     jsii.String("$.Payload"),
	})
	accepted := awsstepfunctions.NewChoice(stack, jsii.String("Accepted?"), nil).
		When(awsstepfunctions.Condition_BooleanEquals(jsii.String("$.accepted"), jsii.Bool(true)),
			awsstepfunctions.NewSucceed(stack, jsii.String("Done"), nil), nil).
		Otherwise(awsstepfunctions.NewFail(stack, jsii.String("Rejected"), &awsstepfunctions.FailProps{
			Error: jsii.String("OrderRejected"),
		}))
	machine := awsstepfunctions.NewStateMachine(stack, jsii.String("Workflow"), &awsstepfunctions.StateMachineProps{
		StateMachineName: jsii.String("cairn-order-workflow"),
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromChainable(invoke.Next(accepted)),
		Timeout:          awscdk.Duration_Minutes(jsii.Number(5)),
	})

	awscdk.NewCfnOutput(stack, jsii.String("StateMachineArn"), &awscdk.CfnOutputProps{
		Value:       machine.StateMachineArn(),
		Description: jsii.String("The workflow's state machine"),
	})
	app.Synth(nil)
}
