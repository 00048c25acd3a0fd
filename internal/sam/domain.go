package sam

import (
	"fmt"
	"regexp"
	"strings"
)

// Custom domains of AWS::Serverless::Api and ::HttpApi (Domain), as the translator makes
// them: the domain name (ApiGatewayDomainName, or ApiGatewayDomainNameV2 for an HTTP API,
// suffixed with a hash of the name), a base path mapping per base path (API mapping for an
// HTTP API) to the API's stage, and with Route53 the alias records of the domain in a record
// set group per hosted zone (RecordSetGroup, suffixed with a hash of the zone).

// basePaths are Domain.BasePath as a list (none when it is not set).
func basePaths(d map[string]any) []any {
	switch b := d["BasePath"].(type) {
	case string:
		if b != "" {
			return []any{b}
		}
	case []any:
		return b
	}
	return nil
}

// restDomain makes api's custom domain of a REST API.
func (t *sam) restDomain(api string, d, attrs map[string]any) error {
	name, cert := d["DomainName"], d["CertificateArn"]
	if name == nil {
		return samErr(api, "Property 'Domain.DomainName' is required.")
	}
	if cert == nil {
		return samErr(api, "Property 'Domain.CertificateArn' is required.")
	}
	id := "ApiGatewayDomainName" + logicalHash(name)
	endpoint := orAny(d["EndpointConfiguration"], "REGIONAL")
	if endpoint != "EDGE" && endpoint != "REGIONAL" && endpoint != "PRIVATE" {
		return samErr(api, "EndpointConfiguration for Custom Domains must be one of ['EDGE', 'REGIONAL', 'PRIVATE'].")
	}
	dp := map[string]any{"DomainName": name, "EndpointConfiguration": map[string]any{"Types": []any{endpoint}}}
	if endpoint == "REGIONAL" {
		dp["RegionalCertificateArn"] = cert
	} else {
		dp["CertificateArn"] = cert
	}
	if v, ok := d["IpAddressType"]; ok {
		dp["EndpointConfiguration"].(map[string]any)["IpAddressType"] = v
	}
	if mtls := d["MutualTlsAuthentication"]; truthy(mtls) {
		m, ok := mtls.(map[string]any)
		if !ok {
			return samErr(api, "Property 'Domain.MutualTlsAuthentication' should be a map.")
		}
		if len(mtlsOther(m)) > 0 {
			return samErr(api, "Available Domain.MutualTlsAuthentication fields are ['TruststoreUri', 'TruststoreVersion'].")
		}
	}
	copyKeys(dp, d, "MutualTlsAuthentication", "SecurityPolicy", "OwnershipVerificationCertificateArn")
	t.put(id, "AWS::ApiGateway::DomainName", dp, copyAttrs(attrs))
	t.referable(api, "DomainName", id)
	if endpoint == "PRIVATE" {
		// the VPC endpoint a private domain is associated with (the translator fails on
		// an association that is no map: CloudFormation reports an internal failure)
		if v := d["AccessAssociation"]; v != nil {
			if _, ok := v.(map[string]any); !ok {
				return samErr(api, "Property 'Domain.AccessAssociation' should be a map (VpcEndpointId).")
			}
		}
		// the translator makes a private domain an AWS::ApiGateway::DomainNameV2 that the
		// template names as API.DomainNameV2; cairn's keeps the DomainName, named so too
		t.referable(api, "DomainNameV2", id)
	}
	paths := basePaths(d)
	if paths == nil {
		t.put(api+"BasePathMapping", "AWS::ApiGateway::BasePathMapping",
			map[string]any{"DomainName": ref(id), "RestApiId": ref(api), "Stage": ref(api + ".Stage")}, copyAttrs(attrs))
	}
	normalize := d["NormalizeBasePath"] != false
	for _, p := range paths {
		s := fmt.Sprint(p)
		path := alnum(s)
		mp := map[string]any{"DomainName": ref(id), "RestApiId": ref(api), "Stage": ref(api + ".Stage"), "BasePath": path}
		if !normalize {
			mp["BasePath"] = s
		}
		t.put(api+path+"BasePathMapping", "AWS::ApiGateway::BasePathMapping", mp, copyAttrs(attrs))
	}
	return t.recordSets(api, id, d, endpoint, attrs)
}

var basePathName = regexp.MustCompile(`[\-_/]+`)

// httpDomain makes api's custom domain of an HTTP API.
func (t *sam) httpDomain(api string, d, attrs map[string]any) error {
	name, cert := d["DomainName"], d["CertificateArn"]
	if name == nil || cert == nil {
		return samErr(api, "Custom Domains only works if both DomainName and CertificateArn are provided.")
	}
	id := "ApiGatewayDomainNameV2" + logicalHash(name)
	endpoint := orAny(d["EndpointConfiguration"], "REGIONAL")
	if endpoint != "REGIONAL" {
		return samErr(api, "EndpointConfiguration for Custom Domains must be one of ['REGIONAL'].")
	}
	if mtls := d["MutualTlsAuthentication"]; truthy(mtls) {
		m, ok := mtls.(map[string]any)
		if !ok {
			return samErr(api, "MutualTlsAuthentication must be a map with at least one of the following fields ['TruststoreUri', 'TruststoreVersion'].")
		}
		if other := mtlsOther(m); len(other) > 0 {
			// the translator names the resource by the keys it does not take
			return samErr(strings.Join(other, ","), "Available MutualTlsAuthentication fields are ['TruststoreUri', 'TruststoreVersion'].")
		}
	}
	cfg := map[string]any{"CertificateArn": cert, "EndpointType": endpoint}
	copyKeys(cfg, d, "OwnershipVerificationCertificateArn", "SecurityPolicy")
	dp := map[string]any{"DomainName": name, "DomainNameConfigurations": []any{cfg}, "Tags": map[string]any{"httpapi:createdBy": samTag}}
	copyKeys(dp, d, "MutualTlsAuthentication")
	t.put(id, "AWS::ApiGatewayV2::DomainName", dp, copyAttrs(attrs))
	t.referable(api, "DomainName", id)
	paths := basePaths(d)
	if paths == nil {
		t.put(api+"ApiMapping", "AWS::ApiGatewayV2::ApiMapping",
			map[string]any{"DomainName": ref(id), "ApiId": ref(api), "Stage": ref(api + ".Stage")}, copyAttrs(attrs))
	}
	for _, p := range paths {
		s, ok := p.(string)
		if !ok {
			return samErr(api, "Basepath must be a string.")
		}
		t.put(api+basePathName.ReplaceAllString(s, "")+"ApiMapping", "AWS::ApiGatewayV2::ApiMapping",
			map[string]any{"DomainName": ref(id), "ApiId": ref(api), "Stage": ref(api + ".Stage"), "ApiMappingKey": strings.Trim(s, "/")}, copyAttrs(attrs))
	}
	return t.recordSets(api, id, d, endpoint, attrs)
}

// recordSets adds the domain's alias records to the record set group of its hosted zone.
func (t *sam) recordSets(api, domainID string, d map[string]any, endpoint any, attrs map[string]any) error {
	if d["Route53"] == nil {
		return nil
	}
	r53, ok := d["Route53"].(map[string]any)
	if !ok {
		return samErr(api, "Property 'Domain.Route53' should be a map.")
	}
	if sep := r53["SeparateRecordSetGroup"]; truthy(sep) {
		if _, ok := sep.(bool); !ok {
			return samErr(api, "Property 'Domain.Route53.SeparateRecordSetGroup' should be a boolean.")
		}
	}
	zone := r53["HostedZoneId"]
	if zone == nil {
		zone = r53["HostedZoneName"]
	}
	if zone == nil {
		return samErr(api, "HostedZoneId or HostedZoneName is required to enable Route53 support on Custom Domains.")
	}
	id := "RecordSetGroup" + logicalHash(zone)
	group := object(object(t.resources[id])["Properties"])
	if group == nil {
		group = map[string]any{"RecordSets": []any{}}
		copyKeys(group, r53, "HostedZoneId")
		if _, ok := group["HostedZoneId"]; !ok {
			copyKeys(group, r53, "HostedZoneName")
		}
		t.put(id, "AWS::Route53::RecordSetGroup", group, copyAttrs(attrs))
	}
	target := map[string]any{}
	copyKeys(target, r53, "EvaluateTargetHealth")
	switch endpoint {
	case "REGIONAL":
		target["HostedZoneId"], target["DNSName"] = getAtt(domainID, "RegionalHostedZoneId"), getAtt(domainID, "RegionalDomainName")
	case "EDGE":
		target["HostedZoneId"], target["DNSName"] = "Z2FDTNDATAQYW2", orAnyValue(r53["DistributionDomainName"], getAtt(domainID, "DistributionDomainName"))
	default:
		target["HostedZoneId"], target["DNSName"] = r53["VpcEndpointHostedZoneId"], r53["VpcEndpointDomainName"]
	}
	sets, _ := group["RecordSets"].([]any)
	kinds := []string{"A"}
	if r53["IpV6"] == true {
		kinds = append(kinds, "AAAA")
	}
	for _, k := range kinds {
		rs := map[string]any{"Name": d["DomainName"], "Type": k, "AliasTarget": target}
		copyKeys(rs, r53, "Region", "SetIdentifier")
		sets = append(sets, rs)
	}
	group["RecordSets"] = sets
	return nil
}

func orAnyValue(v, d any) any {
	if v == nil {
		return d
	}
	return v
}

// mtlsOther are the keys of a domain's MutualTlsAuthentication other than TruststoreUri and
// TruststoreVersion, sorted.
func mtlsOther(m map[string]any) []string {
	var other []string
	for _, k := range sortedKeys(m) {
		if k != "TruststoreUri" && k != "TruststoreVersion" {
			other = append(other, k)
		}
	}
	return other
}
