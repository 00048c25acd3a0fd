package awslocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
)

// dynamicReference resolves the key of a CloudFormation dynamic reference from the
// place's Parameter Store and Secrets Manager (see cfnlocal's dynamic.go for when):
//
//	ssm:NAME[:VERSION]         a String or StringList parameter (AWS's public parameters,
//	                           /aws/service/..., get PublicParameter's stand-in value)
//	ssm-secure:NAME[:VERSION]  a SecureString parameter, decrypted
//	secretsmanager:SECRET-ID[:SecretString[:JSON-KEY[:VERSION-STAGE[:VERSION-ID]]]]
//	                           a secret's SecretString (AWSCURRENT by default), or one of
//	                           its JSON keys; SECRET-ID is a name, or an ARN, also of another
//	                           account's secret
//
// See https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references.html
func (p *Place) dynamicReference(service, key string) (string, error) {
	switch service {
	case "ssm", "ssm-secure":
		return p.parameterReference(service, key)
	case "secretsmanager":
		return p.secretReference(key)
	}
	return "", fmt.Errorf("dynamic references to %s are not supported (ssm, ssm-secure and secretsmanager are)", service)
}

var versionSuffix = regexp.MustCompile(`:(\d+)$`)

func (p *Place) parameterReference(service, key string) (string, error) {
	name := key
	if strings.HasPrefix(key, "arn:") {
		// A shared parameter's ARN: arn:aws:ssm:REGION:ACCOUNT:parameter/NAME.
		_, rest, _ := strings.Cut(key, ":parameter")
		name = rest
		if v := versionSuffix.FindString(key); v != "" && !strings.HasSuffix(rest, v) {
			name += v
		}
	}
	if name == "" {
		return "", fmt.Errorf("{{resolve:%s:%s}} names no parameter", service, key)
	}
	base := versionSuffix.ReplaceAllString(name, "")
	if service == "ssm" && strings.HasPrefix(base, "/aws/service/") {
		if _, err := p.ssm.Get(name, false); err != nil {
			typ := "String"
			if strings.Contains(base, "ami") {
				typ = "AWS::EC2::Image::Id"
			}
			return cfnlocal.PublicParameter(base, typ), nil
		}
	}
	v, err := p.ssm.Get(name, service == "ssm-secure")
	var se *ssmlocal.Error
	if errors.As(err, &se) && strings.HasPrefix(se.Code, "Parameter") {
		return "", fmt.Errorf("%s:%s %w", service, key, cfnlocal.ErrReferenceNotFound)
	}
	if err != nil {
		return "", err
	}
	switch {
	case service == "ssm" && v.Type == "SecureString":
		return "", fmt.Errorf("Parameters [%s] referenced by template have types not supported by CloudFormation: use {{resolve:ssm-secure:%s}} for a SecureString", key, key)
	case service == "ssm-secure" && v.Type != "SecureString":
		return "", fmt.Errorf("Parameters [%s] referenced by template have types not supported by CloudFormation: use {{resolve:ssm:%s}} for a %s", key, key, v.Type)
	}
	return v.Value, nil
}

// secretReference resolves a secretsmanager reference, failing as CloudFormation does: in
// Secrets Manager's words (with the service's details, as AWS's handlers quote them) when
// the secret or its version cannot be read, in CloudFormation's when a JSON key is missing.
func (p *Place) secretReference(key string) (string, error) {
	parts := strings.Split(key, ":")
	id := parts[0]
	if id == "arn" && len(parts) >= 7 {
		id, parts = strings.Join(parts[:7], ":"), parts[7:]
	} else {
		parts = parts[1:]
	}
	seg := func(i int) string {
		if i < len(parts) {
			return parts[i]
		}
		return ""
	}
	if s := seg(0); s != "" && s != "SecretString" {
		return "", fmt.Errorf("{{resolve:secretsmanager:%s}}: the second segment must be SecretString (got %q)", key, s)
	}
	jsonKey, stage, versionID := seg(1), seg(2), seg(3)
	secrets := p.secrets
	if strings.HasPrefix(id, "arn:") {
		if q := p.e.placeOfARN(id); q != nil {
			secrets = q.secrets
		}
	}
	in := secretslocal.GetInput{SecretId: id, VersionId: versionID}
	if versionID == "" {
		in.VersionStage = stage
	}
	out, err := secrets.Get(in)
	var se *secretslocal.Error
	if errors.As(err, &se) {
		return "", fmt.Errorf("%s (Service: AWSSecretsManager; Status Code: 400; Error Code: %s; Request ID: %s; Proxy: null)", se.Message, se.Code, newID())
	}
	if err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("secret %s holds a SecretBinary: dynamic references read SecretString only", out.Name)
	}
	if jsonKey == "" {
		return *out.SecretString, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*out.SecretString), &doc); err != nil {
		return "", errors.New("Could not parse SecretString JSON")
	}
	raw, ok := doc[jsonKey]
	if !ok {
		return "", errors.New("Could not find a value associated with JSONKey in SecretString")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	return string(raw), nil
}
