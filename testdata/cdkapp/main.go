// Command cdkapp is the example CDK app of "Deploying a CDK app" (docs/cdk.md; package app):
// `cdk synth` here (cdk.json runs `go run .`) writes its cloud assembly to cdk.out, which
// `cairn plan cdk.out` and `cairn push cdk.out` take as a bundle.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairn-dev/cairn/testdata/cdkapp/app"
)

func main() {
	defer jsii.Close()
	a := awscdk.NewApp(nil)
	app.Build(a, app.FromContext(a.Node(), "."))
	a.Synth(nil)
}
