// Package app is the example CDK app of "Deploying a CDK app" (docs/cdk.md): three stacks
// in two environments — a stage of two stacks (a queue, and a Lambda function whose code
// is a file asset, reading the queue through a cross-stack reference) in cairn's account
// and region, and an audit topic in another account and region. Its variants (a code
// change, the audit stack removed, the stage renamed, an image asset) are what cairn's
// tests deploy, update and prune; each is synthesized by infra's tests into
// testdata/cdkapp/assemblies/NAME.
package app

import (
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The two environments: cairn's own account and region in `cairn local up`, and the
// account and region of its second target there (--targets 111111111111:eu-west-1).
var (
	Home  = awscdk.Environment{Account: jsii.String("000000000000"), Region: jsii.String("us-east-1")}
	Other = awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")}
)

// Options choose the app's variant; the zero value is not one, use Default.
type Options struct {
	// Dir is the app's folder, holding lambda/ and image/.
	Dir string
	// Stage names the stage of the queue and the function (its stacks are STAGE-Data and
	// STAGE-Service).
	Stage string
	// Code is the folder under lambda/ holding the function's code.
	Code string
	// Audit keeps the audit stack of the other environment.
	Audit bool
	// Image adds a Docker image asset to the service stack.
	Image bool
}

// Default is the app as committed: stage Dev, code v1, with the audit stack, no image.
func Default(dir string) Options {
	return Options{Dir: dir, Stage: "Dev", Code: "v1", Audit: true}
}

// FromContext reads the variant from the CDK context (cdk synth -c cdkapp:stage=Test ...):
// cdkapp:stage, cdkapp:code, cdkapp:audit ("false" drops it) and cdkapp:image ("true").
func FromContext(node constructs.Node, dir string) Options {
	o := Default(dir)
	str := func(key string) (string, bool) {
		v, ok := node.TryGetContext(jsii.String(key)).(string)
		return v, ok && v != ""
	}
	if v, ok := str("cdkapp:stage"); ok {
		o.Stage = v
	}
	if v, ok := str("cdkapp:code"); ok {
		o.Code = v
	}
	if v, ok := str("cdkapp:audit"); ok {
		o.Audit = v != "false"
	}
	if v, ok := str("cdkapp:image"); ok {
		o.Image = v == "true"
	}
	return o
}

// Build adds the app's stacks to app.
func Build(app awscdk.App, o Options) {
	// Aspects such as tags stop at a stage's boundary: the stage is tagged too.
	awscdk.Tags_Of(app).Add(jsii.String("app"), jsii.String("orders"), nil)
	stage := awscdk.NewStage(app, jsii.String(o.Stage), &awscdk.StageProps{Env: &Home})
	awscdk.Tags_Of(stage).Add(jsii.String("app"), jsii.String("orders"), nil)

	data := awscdk.NewStack(stage, jsii.String("Data"), &awscdk.StackProps{
		Description: jsii.String("The orders queue"),
	})
	queue := awssqs.NewQueue(data, jsii.String("Orders"), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(60)),
	})

	service := awscdk.NewStack(stage, jsii.String("Service"), &awscdk.StackProps{
		Description: jsii.String("The function reading the orders queue"),
	})
	fn := awslambda.NewFunction(service, jsii.String("Handler"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PYTHON_3_14(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromAsset(jsii.String(filepath.Join(o.Dir, "lambda", o.Code)), nil),
		// The cross-stack reference: the Data stack exports the queue's URL, which the
		// Service stack imports.
		Environment: &map[string]*string{"QUEUE_URL": queue.QueueUrl()},
	})
	queue.GrantConsumeMessages(fn)
	if o.Image {
		worker := awsecrassets.NewDockerImageAsset(service, jsii.String("Worker"), &awsecrassets.DockerImageAssetProps{
			Directory: jsii.String(filepath.Join(o.Dir, "image")),
		})
		awscdk.NewCfnOutput(service, jsii.String("WorkerImage"), &awscdk.CfnOutputProps{Value: worker.ImageUri()})
	}

	if o.Audit {
		audit := awscdk.NewStack(app, jsii.String("Audit"), &awscdk.StackProps{
			Env:         &Other,
			StackName:   jsii.String("orders-audit"),
			Description: jsii.String("Where order events are audited"),
		})
		awssns.NewTopic(audit, jsii.String("Events"), nil)
	}
}
