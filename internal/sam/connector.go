package sam

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// AWS::Serverless::Connector, and the Connectors attribute of any resource (a connector
// SOURCECONNECTOR whose Source is that resource), as the translator expands them: once
// every other Serverless resource is expanded (a connector names the resources as
// CloudFormation will see them), the translator's connector profile for the source and
// destination types (translator.json) says what to make — a managed policy on the role of
// the source or destination, an SQS queue policy, an SNS topic policy or Lambda
// permissions — with the statements of the permissions (Read, Write) asked for.

// connectorData is the translator's connector profiles.
type connectorData struct {
	Permissions map[string]map[string]connectorProfile `json:"permissions"`
	Resources   map[string]struct {
		Inputs  map[string]any `json:"Inputs"`
		Outputs map[string]any `json:"Outputs"`
	} `json:"resources"`
}

type connectorProfile struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// samToCFN are the types a connector may name a Serverless resource by.
var samToCFN = map[string]string{
	"AWS::Serverless::Function": "AWS::Lambda::Function", "AWS::Serverless::StateMachine": "AWS::StepFunctions::StateMachine",
	"AWS::Serverless::Api": "AWS::ApiGateway::RestApi", "AWS::Serverless::HttpApi": "AWS::ApiGatewayV2::Api",
	"AWS::Serverless::SimpleTable": "AWS::DynamoDB::Table",
}

// embeddedConnectors turns the Connectors attribute of every resource into
// AWS::Serverless::Connector resources and removes it.
func (t *sam) embeddedConnectors() error {
	for _, src := range sortedKeys(t.resources) {
		r := object(t.resources[src])
		cs, ok := r["Connectors"]
		if !ok {
			continue
		}
		delete(r, "Connectors")
		cm, ok := cs.(map[string]any)
		if !ok {
			return samErr(src, "Property '%s.Connectors' should be a map.", src)
		}
		for _, name := range sortedKeys(cm) {
			id := src + name
			c, ok := cm[name].(map[string]any)
			if !ok {
				return samErr(id, "%s.%s should be a map.", src, id)
			}
			c = copyProps(c)
			props, ok := c["Properties"].(map[string]any)
			if !ok {
				return samErr(src, "Property 'Connectors.%s.Properties' should be a map.", name)
			}
			source := map[string]any{"Id": src}
			if ref, ok := props["SourceReference"].(map[string]any); ok {
				if _, has := ref["Id"]; has {
					return samErr(src, "'Id' shouldn't be defined in 'SourceReference'.")
				}
				for k, v := range ref {
					source[k] = v
				}
				delete(props, "SourceReference")
			}
			props["Source"] = source
			c["Type"] = "AWS::Serverless::Connector"
			if _, dup := t.resources[id]; dup {
				return samErr(src, "Connector %s collides with resource %s of the template", name, id)
			}
			t.resources[id] = c
		}
	}
	return nil
}

// connectorRef is what a connector knows of its source or destination.
type connectorRef struct {
	logicalID, typ                               string
	arn, roleName, queueURL, id, name, qualifier any
}

var profileVar = regexp.MustCompile(`%\{[\w.]+\}`)

func (t *sam) connectorReference(cid string, obj, other map[string]any) (connectorRef, error) {
	_, hasID := obj["Id"]
	others := 0
	for k := range obj {
		if k != "Id" && k != "Qualifier" {
			others++
		}
	}
	if hasID == (others > 0) {
		return connectorRef{}, samErr(cid, "Must provide 'Id' (with optional 'Qualifier') or a supported combination of other properties.")
	}
	if !hasID {
		typ, _ := obj["Type"].(string)
		if typ == "" {
			return connectorRef{}, samErr(cid, "'Type' is missing or not a string.")
		}
		if c, ok := samToCFN[typ]; ok {
			typ = c
		}
		return connectorRef{typ: typ, arn: obj["Arn"], roleName: obj["RoleName"], queueURL: obj["QueueUrl"], id: obj["ResourceId"],
			name: obj["Name"], qualifier: obj["Qualifier"]}, nil
	}
	lid, _ := obj["Id"].(string)
	if lid == "" {
		return connectorRef{}, samErr(cid, "'Id' is missing or not a string.")
	}
	r := object(t.resources[lid])
	if r == nil {
		return connectorRef{}, samErr(cid, "Unable to find resource with logical ID '%s'.", lid)
	}
	typ := typeOfRaw(r)
	info := data().Connectors.Resources[typ]
	out := profileReplace(copyAny(info.Outputs), map[string]any{"logicalId": lid})
	outputs, _ := out.(map[string]any)
	ref := connectorRef{logicalID: lid, typ: typ, arn: outputs["Arn"], queueURL: outputs["Url"], id: outputs["Id"],
		name: outputs["Name"], qualifier: outputs["Qualifier"]}
	if q, ok := obj["Qualifier"]; ok {
		ref.qualifier = q
	}
	props := object(r["Properties"])
	var role any
	switch in := info.Inputs["Role"].(type) {
	case string:
		role = props[in]
	case map[string]any:
		if in["Function"] == "GetEventsRuleRole" {
			targets, _ := props["Targets"].([]any)
			for _, tg := range targets {
				tm := object(tg)
				if id := logicalIDOf(tm["Arn"]); id != "" && id == other["Id"] || other["Arn"] != nil && equalJSON(tm["Arn"], other["Arn"]) {
					role = tm["RoleArn"]
				}
			}
		}
	}
	if id := logicalIDOf(role); id != "" {
		ref.roleName = map[string]any{"Ref": id}
	}
	return ref, nil
}

// logicalIDOf is the resource a Ref or Fn::GetAtt names, or "".
func logicalIDOf(v any) string {
	m := object(v)
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	switch g := m["Fn::GetAtt"].(type) {
	case []any:
		if len(g) > 0 {
			s, _ := g[0].(string)
			return s
		}
	case string:
		s, _, _ := strings.Cut(g, ".")
		return s
	}
	return ""
}

func copyAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// profileReplace replaces %{Name} in the strings of v: a string that is only a variable
// becomes its value, one that contains variables an Fn::Sub of them.
func profileReplace(v any, vars map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			x[k] = profileReplace(vv, vars)
		}
		return x
	case []any:
		for i := range x {
			x[i] = profileReplace(x[i], vars)
		}
		return x
	case string:
		subs := map[string]any{}
		for _, k := range sortedKeys(vars) {
			pattern := "%{" + k + "}"
			if !strings.Contains(x, pattern) {
				continue
			}
			if x == pattern {
				return vars[k]
			}
			name := alnum(k)
			x = strings.ReplaceAll(x, pattern, "${"+name+"}")
			subs[name] = vars[k]
		}
		if !strings.Contains(x, "${") {
			return x
		}
		if len(subs) > 0 {
			return map[string]any{"Fn::Sub": []any{x, subs}}
		}
		return map[string]any{"Fn::Sub": x}
	}
	return v
}

func (t *sam) connector(cid string) error {
	r := object(t.resources[cid])
	props := object(r["Properties"])
	source := object(props["Source"])
	dests, multi := props["Destination"].([]any)
	if !multi {
		dests = []any{props["Destination"]}
	}
	perms := map[string]bool{}
	list, _ := props["Permissions"].([]any)
	for _, p := range list {
		perms[fmt.Sprint(p)] = true
	}
	attrs := passthrough(r)
	var generated []string
	for i, d := range dests {
		dm := object(d)
		dst, err := t.connectorReference(cid, dm, source)
		if err != nil {
			return err
		}
		src, err := t.connectorReference(cid, source, dm)
		if err != nil {
			return err
		}
		pr, ok := data().Connectors.Permissions[src.typ][dst.typ]
		if !ok {
			return samErr(cid, "Unable to create connector from %s to %s; it's not supported or the template is invalid.", src.typ, dst.typ)
		}
		pp := copyAny(pr.Properties).(map[string]any)
		if err := checkConnectorPermissions(cid, src, dst, pp, perms); err != nil {
			return err
		}
		vars := map[string]any{"Source.Arn": src.arn, "Destination.Arn": dst.arn, "Source.ResourceId": src.id, "Destination.ResourceId": dst.id,
			"Source.Name": src.name, "Destination.Name": dst.name, "Source.Qualifier": src.qualifier, "Destination.Qualifier": dst.qualifier}
		if err := missingProfileVar(cid, pp, vars); err != nil {
			return err
		}
		pp = profileReplace(pp, vars).(map[string]any)
		cats := object(pp["AccessCategories"])
		var order []string // the profile's order of access categories
		for _, c := range pp["AccessCategoryOrder"].([]any) {
			order = append(order, fmt.Sprint(c))
		}
		statements := func() map[string]any {
			var st []any
			for _, name := range order {
				if perms[name] {
					s, _ := object(cats[name])["Statement"].([]any)
					st = append(st, s...)
				}
			}
			return map[string]any{"Version": "2012-10-17", "Statement": st}
		}
		sourcePolicy := pp["SourcePolicy"] == true
		owner, side := dst, "Destination"
		if sourcePolicy {
			owner, side = src, "Source"
		}
		name := func(kind string) string {
			if multi {
				return fmt.Sprintf("%s%sDestination%d", cid, kind, i)
			}
			return cid + kind
		}
		put := func(id, typ string, p map[string]any) {
			a := copyAttrs(attrs)
			if dep, ok := r["DependsOn"]; ok {
				a["DependsOn"] = dep
			}
			meta := map[string]any{"aws:sam:connectors": map[string]any{cid: map[string]any{
				"Source": map[string]any{"Type": t.originalType(src)}, "Destination": map[string]any{"Type": t.originalType(dst)}}}}
			a["Metadata"] = meta
			t.put(id, typ, p, a)
			generated = append(generated, id)
		}
		switch pr.Type {
		case "AWS_IAM_ROLE_MANAGED_POLICY":
			if owner.roleName == nil {
				return samErr(cid, "Unable to get IAM role name from '%s' resource.", side)
			}
			id := name("Policy")
			put(id, "AWS::IAM::ManagedPolicy", map[string]any{"PolicyDocument": statements(), "Roles": []any{owner.roleName}})
			t.policyDependedBy(pp["DependedBy"], src, dst, id)
		case "AWS_SQS_QUEUE_POLICY":
			if owner.queueURL == nil {
				return samErr(cid, "Unable to get SQS queue URL from '%s' resource.", side)
			}
			put(name("QueuePolicy"), "AWS::SQS::QueuePolicy", map[string]any{"PolicyDocument": statements(), "Queues": []any{owner.queueURL}})
		case "AWS_SNS_TOPIC_POLICY":
			if owner.arn == nil {
				return samErr(cid, "Unable to get SNS topic ARN from '%s' resource.", side)
			}
			put(name("TopicPolicy"), "AWS::SNS::TopicPolicy", map[string]any{"PolicyDocument": statements(), "Topics": []any{owner.arn}})
		case "AWS_LAMBDA_PERMISSION":
			if owner.arn == nil {
				return samErr(cid, "Unable to get Lambda function ARN from '%s' resource.", side)
			}
			for _, cat := range order {
				if !perms[cat] {
					continue
				}
				c := object(cats[cat])
				lp := map[string]any{"Action": c["Action"], "FunctionName": owner.arn, "Principal": c["Principal"], "SourceArn": c["SourceArn"]}
				copyKeys(lp, c, "SourceAccount")
				put(name(cat+"LambdaPermission"), "AWS::Lambda::Permission", lp)
			}
		default:
			return samErr(cid, "Profile type %s is not supported", pr.Type)
		}
	}
	if len(generated) == 0 {
		return samErr(cid, "'Destination' is an empty list")
	}
	delete(t.resources, cid)
	t.replaceDependency(cid, generated)
	return nil
}

// missingProfileVar is the error of connector cid when its profile (pp) uses a variable
// of vars that has no value, or nil.
func missingProfileVar(cid string, pp map[string]any, vars map[string]any) error {
	b, _ := json.Marshal(pp)
	for _, m := range profileVar.FindAllString(string(b), -1) {
		if v, known := vars[m[2:len(m)-1]]; known && v == nil {
			return samErr(cid, "%s is missing.", m[2:len(m)-1])
		}
	}
	return nil
}

// checkConnectorPermissions checks the Permissions (perms) of connector cid from src to
// dst against the access categories of its profile (pp), and their valid combinations.
func checkConnectorPermissions(cid string, src, dst connectorRef, pp map[string]any, perms map[string]bool) error {
	cats := object(pp["AccessCategories"])
	valid := strings.Join(sortedKeys(cats), ", ")
	if len(perms) == 0 {
		return samErr(cid, "'Permissions' cannot be empty; valid values are: %s.", valid)
	}
	for p := range perms {
		if _, ok := cats[p]; !ok {
			return samErr(cid, "Unsupported 'Permissions' provided for connector from %s to %s; valid values are: %s.", src.typ, dst.typ, valid)
		}
	}
	combos, ok := pp["ValidAccessCategories"].([]any)
	if !ok {
		return nil
	}
	asked := sortedKeys(perms)
	var names []string
	for _, c := range combos {
		var l []string
		for _, x := range c.([]any) {
			l = append(l, fmt.Sprint(x))
		}
		sort.Strings(l)
		if slices.Equal(l, asked) {
			return nil
		}
		names = append(names, strings.Join(l, " + "))
	}
	return samErr(cid, "Unsupported 'Permissions' provided for connector from %s to %s; valid combinations are: %s.", src.typ, dst.typ, strings.Join(names, ", "))
}

// policyDependedBy makes what the profile's DependedBy names (the one event source mapping
// from src to dst, or src itself) depend on the managed policy id a connector made.
func (t *sam) policyDependedBy(dependedBy any, src, dst connectorRef, id string) {
	switch dependedBy {
	case "DESTINATION_EVENT_SOURCE_MAPPING":
		var esms []string
		for _, n := range sortedKeys(t.resources) {
			er := object(t.resources[n])
			ep := object(er["Properties"])
			if typeOfRaw(er) == "AWS::Lambda::EventSourceMapping" && logicalIDOf(ep["FunctionName"]) == dst.logicalID &&
				logicalIDOf(ep["EventSourceArn"]) == src.logicalID && src.logicalID != "" {
				esms = append(esms, n)
			}
		}
		if len(esms) == 1 {
			addDependsOn(object(t.resources[esms[0]]), id)
		}
	case "SOURCE":
		if src.logicalID != "" {
			addDependsOn(object(t.resources[src.logicalID]), id)
		}
	}
}

// replaceDependency makes what depended on connector cid depend on what it made
// (generated) instead.
func (t *sam) replaceDependency(cid string, generated []string) {
	for _, n := range sortedKeys(t.resources) {
		rr := object(t.resources[n])
		deps := dependsOn(rr)
		if i := slices.Index(deps, cid); i >= 0 {
			deps = slices.Delete(deps, i, i+1)
			for _, g := range generated {
				if !slices.Contains(deps, g) {
					deps = append(deps, g)
				}
			}
			l := make([]any, len(deps))
			for j, d := range deps {
				l[j] = d
			}
			rr["DependsOn"] = l
		}
	}
}

// originalType is the type of a connector's end as the template wrote it.
func (t *sam) originalType(r connectorRef) string {
	if typ, ok := t.original[r.logicalID]; ok {
		return typ
	}
	return r.typ
}

func dependsOn(r map[string]any) []string {
	switch d := r["DependsOn"].(type) {
	case string:
		return []string{d}
	case []any:
		var out []string
		for _, x := range d {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

func addDependsOn(r map[string]any, id string) {
	if r == nil {
		return
	}
	deps := dependsOn(r)
	if slices.Contains(deps, id) {
		return
	}
	l := make([]any, 0, len(deps)+1)
	for _, d := range deps {
		l = append(l, d)
	}
	r["DependsOn"] = append(l, id)
}
