package sam

import "strings"

// artifactProperties are the properties of Serverless resources that name a local artifact
// packaging uploads (as `sam package` and `aws cloudformation package` do), replacing the
// path by its S3 location.
var artifactProperties = map[string][]string{
	"AWS::Serverless::Function":     {"CodeUri"},
	"AWS::Serverless::LayerVersion": {"ContentUri"},
	"AWS::Serverless::Api":          {"DefinitionUri"},
	"AWS::Serverless::HttpApi":      {"DefinitionUri"},
	"AWS::Serverless::StateMachine": {"DefinitionUri"},
	"AWS::Serverless::Application":  {"Location"},
	"AWS::Serverless::GraphQLApi":   {"SchemaUri", "CodeUri"},
}

// AssumePackaged makes m, a template's tree, look packaged: a local path in an artifact
// property, of a resource or of Globals, becomes an S3 location named after it, so the
// template expands as it will once its artifacts are uploaded (cairn validates templates
// before it packages them).
func AssumePackaged(m map[string]any) {
	fix := func(props map[string]any, names []string) {
		for _, n := range names {
			if s, ok := props[n].(string); ok && !strings.HasPrefix(s, "s3://") && !strings.HasPrefix(s, "https://") && s != "" {
				key := strings.Trim(strings.ReplaceAll(s, "/", "-"), ".-")
				if key == "" {
					key = "root" // the template's own folder
				}
				props[n] = "s3://cairn-packaged/" + key
				if n == "Location" { // a nested stack's template: an https URL
					props[n] = "https://cairn-packaged.s3.amazonaws.com/" + key
				}
			}
		}
	}
	res, _ := m["Resources"].(map[string]any)
	for _, r := range res {
		rm, _ := r.(map[string]any)
		typ, _ := rm["Type"].(string)
		if props, ok := rm["Properties"].(map[string]any); ok {
			fix(props, artifactProperties[typ])
		}
	}
	globals, _ := m["Globals"].(map[string]any)
	for kind, g := range globals {
		if props, ok := g.(map[string]any); ok {
			fix(props, artifactProperties["AWS::Serverless::"+kind])
		}
	}
}
