package sam

import (
	"fmt"
	"slices"
	"strings"
)

// keptTypes are, by the type the translator generates, the types a resource of the
// template may have under the same logical id: the resource it replaces (a Function's own
// AWS::Lambda::Function) or one it amends (an S3 bucket of an S3 event) (aws-sam-translator
// 1.110.0, translator/verify_logical_id.py).
var keptTypes = map[string][]string{
	"AWS::Lambda::Function":              {"AWS::Serverless::Function"},
	"AWS::Lambda::LayerVersion":          {"AWS::Serverless::LayerVersion"},
	"AWS::Lambda::CapacityProvider":      {"AWS::Serverless::CapacityProvider"},
	"AWS::ApiGateway::RestApi":           {"AWS::Serverless::Api"},
	"AWS::ApiGatewayV2::Api":             {"AWS::Serverless::HttpApi", "AWS::Serverless::WebSocketApi"},
	"AWS::S3::Bucket":                    {"AWS::S3::Bucket"},
	"AWS::SNS::Topic":                    {"AWS::SNS::Topic"},
	"AWS::DynamoDB::Table":               {"AWS::Serverless::SimpleTable"},
	"AWS::CloudFormation::Stack":         {"AWS::Serverless::Application"},
	"AWS::Cognito::UserPool":             {"AWS::Cognito::UserPool"},
	"AWS::ApiGateway::DomainName":        {"AWS::ApiGateway::DomainName"},
	"AWS::ApiGateway::BasePathMapping":   {"AWS::ApiGateway::BasePathMapping"},
	"AWS::ApiGateway::DomainNameV2":      {"AWS::ApiGateway::DomainNameV2"},
	"AWS::ApiGateway::BasePathMappingV2": {"AWS::ApiGateway::BasePathMappingV2"},
	"AWS::StepFunctions::StateMachine":   {"AWS::Serverless::StateMachine"},
	"AWS::AppSync::GraphQLApi":           {"AWS::Serverless::GraphQLApi"},
}

// collides records, the first time, a resource generated for t.cur under the logical id
// of another resource of the template, which the translator refuses.
func (t *sam) collides(id, typ string) {
	orig := t.original[id]
	// the implicit APIs' plugin runs before the check and adopts what the template has
	if strings.HasPrefix(id, implicitREST) || strings.HasPrefix(id, "ServerlessHttpApi") {
		return
	}
	if t.dup != nil || orig == "" || t.cur == "" || slices.Contains(keptTypes[typ], orig) {
		return
	}
	msg := fmt.Sprintf("Transforming resource with id [%s] attempts to create a new resource with id [%s] and type \"%s\". A resource with that id already exists within this template. Please use a different id for that resource.", t.cur, id, typ)
	t.dup = &Error{LogicalID: t.cur, Msg: "Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document. Number of errors found: 1. " + msg}
}
