package assembly

import (
	"encoding/json"
	"regexp"
)

// manifest is the part of the cloud assembly schema's AssemblyManifest cairn reads.
type manifest struct {
	Version   string                      `json:"version"`
	Artifacts map[string]artifactManifest `json:"artifacts"`
	Missing   []struct {
		Key      string `json:"key"`
		Provider string `json:"provider"`
	} `json:"missing"`
}

type artifactManifest struct {
	Type         string                     `json:"type"`
	Environment  string                     `json:"environment"`
	Dependencies []string                   `json:"dependencies"`
	DisplayName  string                     `json:"displayName"`
	Metadata     map[string][]metadataEntry `json:"metadata"`
	MetadataFile string                     `json:"additionalMetadataFile"`
	Properties   json.RawMessage            `json:"properties"`
}

type metadataEntry struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// stackProperties is the schema's AwsCloudFormationStackProperties, as cairn reads it.
type stackProperties struct {
	TemplateFile                      string            `json:"templateFile"`
	Parameters                        map[string]string `json:"parameters"`
	Tags                              map[string]string `json:"tags"`
	NotificationARNs                  []string          `json:"notificationArns"`
	StackName                         string            `json:"stackName"`
	TerminationProtection             bool              `json:"terminationProtection"`
	AssumeRoleARN                     string            `json:"assumeRoleArn"`
	AssumeRoleExternalID              string            `json:"assumeRoleExternalId"`
	CloudFormationExecutionRoleARN    string            `json:"cloudFormationExecutionRoleArn"`
	RequiresBootstrapStackVersion     int               `json:"requiresBootstrapStackVersion"`
	BootstrapStackVersionSSMParameter string            `json:"bootstrapStackVersionSsmParameter"`
	AdditionalDependencies            []string          `json:"additionalDependencies"`
}

// assetManifestProperties is the schema's AssetManifestProperties.
type assetManifestProperties struct {
	File                              string `json:"file"`
	RequiresBootstrapStackVersion     int    `json:"requiresBootstrapStackVersion"`
	BootstrapStackVersionSSMParameter string `json:"bootstrapStackVersionSsmParameter"`
}

// nestedProperties is the schema's NestedCloudAssemblyProperties.
type nestedProperties struct {
	DirectoryName string `json:"directoryName"`
	DisplayName   string `json:"displayName"`
}

// assetManifest is the cdk-assets manifest format (AssetManifest), as cairn reads it.
type assetManifest struct {
	Version string `json:"version"`
	Files   map[string]struct {
		DisplayName string `json:"displayName"`
		Source      struct {
			Path       string   `json:"path"`
			Packaging  string   `json:"packaging"`
			Executable []string `json:"executable"`
		} `json:"source"`
		Destinations map[string]destination `json:"destinations"`
	} `json:"files"`
	DockerImages map[string]struct {
		DisplayName  string                 `json:"displayName"`
		Destinations map[string]destination `json:"destinations"`
	} `json:"dockerImages"`
}

type destination struct {
	Region               string `json:"region"`
	AssumeRoleARN        string `json:"assumeRoleArn"`
	AssumeRoleExternalID string `json:"assumeRoleExternalId"`
	BucketName           string `json:"bucketName"`
	ObjectKey            string `json:"objectKey"`
	RepositoryName       string `json:"repositoryName"`
	ImageTag             string `json:"imageTag"`
}

// environmentRE is the schema's environment format, aws://ACCOUNT/REGION.
var environmentRE = regexp.MustCompile(`^aws://([a-zA-Z0-9\-@._]+)/([a-z0-9-]+)$`)
