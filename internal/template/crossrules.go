package template

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Rules a service enforces between two resources of a template, when one names the other
// (a Ref, or a Fn::GetAtt of its ARN): the pairs cfn-lint's rules E3052, E3054, E3502,
// E3026, E3698, E3705, E3707 and E3708 check. Each is judged only when both sides are literal.

// crossRules checks a resource's properties against the resources they name.
func (c *checker) crossRules(r *resource, props *yaml.Node, base string) {
	switch r.typ {
	case "AWS::ECS::Service":
		c.ecsService(r, props, base)
	case "AWS::SQS::Queue":
		c.deadLetterQueue(r, props, base)
	case "AWS::ApiGateway::Method":
		c.methodAuthorizer(props, base)
	case "AWS::ApiGateway::Stage":
		c.stageDeployment(props, base)
	case "AWS::Lambda::EventSourceMapping":
		c.fifoBatchSize(props, base)
	case "AWS::RDS::DBInstance":
		c.instanceEngine(props, base)
	case "AWS::ElastiCache::ReplicationGroup":
		c.clusterMode(r, props, base)
	}
}

// named is the resource of type typ that n names by Ref, or by Fn::GetAtt of attr when
// attr is set; nil otherwise.
func (c *checker) named(n *yaml.Node, typ, attr string) *resource {
	name := refTarget(n)
	if attr != "" {
		name = ""
		if n = resolve(n); n != nil && intrinsic(n) == "Fn::GetAtt" {
			arg := resolve(n.Content[1])
			res, a := getAttArgs(arg)
			if arg.Kind == yaml.ScalarNode {
				res, a, _ = strings.Cut(arg.Value, ".")
			}
			if a == attr {
				name = res
			}
		}
	}
	if r := c.resources[name]; r != nil && r.typ == typ {
		return r
	}
	return nil
}

// propText is the plain text of a resource's property, ok false when it is absent or not
// literal.
func propText(props *yaml.Node, k string) (string, bool) {
	n := value(props, k)
	if n == nil {
		return "", false
	}
	if _, ok := plainScalar(n); !ok {
		return "", false
	}
	return canonical(n), true
}

// ecsService: ECS refuses a service whose FARGATE launch type its task definition is not
// compatible with ("Task definition does not support launch_type FARGATE"; E3054), and one
// of a task definition of the awsvpc network mode without a NetworkConfiguration ("Network
// Configuration must be provided when networkMode 'awsvpc' is specified"; E3052).
func (c *checker) ecsService(r *resource, props *yaml.Node, base string) {
	td := c.named(value(props, "TaskDefinition"), "AWS::ECS::TaskDefinition", "")
	if td == nil {
		return
	}
	tdProps := value(td.node, "Properties")
	at := value(props, "TaskDefinition")
	if lt, ok := propText(props, "LaunchType"); ok && lt == "FARGATE" {
		if compat := value(tdProps, "RequiresCompatibilities"); compat != nil && compat.Kind == yaml.SequenceNode {
			list := scalars(compat)
			if len(list) == len(compat.Content) && !slices.Contains(list, "FARGATE") {
				c.errorf(at, base+".Properties.TaskDefinition", "service %s runs on FARGATE, but task definition %s requires %s: ECS refuses the service; add FARGATE to the task definition's RequiresCompatibilities", r.name, td.name, strings.Join(list, ", "))
			}
		}
	}
	if mode, ok := propText(tdProps, "NetworkMode"); ok && mode == "awsvpc" && value(props, "NetworkConfiguration") == nil {
		c.errorf(key(r.node, "Properties"), base+".Properties", "service %s runs task definition %s of the awsvpc network mode, so it needs a NetworkConfiguration (its subnets): ECS refuses the service without one", r.name, td.name)
	}
}

// fifoQueue reports whether a queue is FIFO (FifoQueue true), ok false when it cannot
// be told.
func fifoQueue(q *resource) (fifo, ok bool) {
	props := value(q.node, "Properties")
	if value(props, "FifoQueue") == nil {
		return false, true
	}
	v, ok := propText(props, "FifoQueue")
	return v == "true", ok
}

// deadLetterQueue: SQS refuses a redrive policy whose dead-letter queue is not of the
// source queue's kind, FIFO or standard (E3502).
func (c *checker) deadLetterQueue(r *resource, props *yaml.Node, base string) {
	target := value(value(props, "RedrivePolicy"), "deadLetterTargetArn")
	dlq := c.named(target, "AWS::SQS::Queue", "Arn")
	if dlq == nil {
		return
	}
	src, ok1 := fifoQueue(r)
	dst, ok2 := fifoQueue(dlq)
	if ok1 && ok2 && src != dst {
		c.errorf(target, base+".Properties.RedrivePolicy.deadLetterTargetArn", "queue %s is %s, but its dead-letter queue %s is %s: SQS refuses the redrive policy; a dead-letter queue is of its source queue's kind", r.name, queueKind(src), dlq.name, queueKind(dst))
	}
}

func queueKind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// methodAuthorizer: API Gateway refuses a method whose AuthorizationType is not its
// authorizer's kind: COGNITO_USER_POOLS for a Cognito authorizer, CUSTOM for a TOKEN or
// REQUEST (Lambda) one (E3708).
func (c *checker) methodAuthorizer(props *yaml.Node, base string) {
	auth := c.named(value(props, "AuthorizerId"), "AWS::ApiGateway::Authorizer", "")
	if auth == nil {
		return
	}
	kind, ok1 := propText(value(auth.node, "Properties"), "Type")
	got, ok2 := propText(props, "AuthorizationType")
	if !ok1 || !ok2 {
		return
	}
	want := "CUSTOM"
	if kind == "COGNITO_USER_POOLS" {
		want = kind
	}
	if got != want {
		c.errorf(value(props, "AuthorizationType"), base+".Properties.AuthorizationType", "AuthorizationType %s does not fit authorizer %s of Type %s: API Gateway refuses the method; set AuthorizationType: %s", got, auth.name, kind, want)
	}
}

// stageDeployment: API Gateway refuses a stage whose deployment is of another API
// ("Invalid deployment identifier"; E3698).
func (c *checker) stageDeployment(props *yaml.Node, base string) {
	dep := c.named(value(props, "DeploymentId"), "AWS::ApiGateway::Deployment", "")
	api := refTarget(value(props, "RestApiId"))
	if dep == nil || api == "" {
		return
	}
	if depAPI := refTarget(value(value(dep.node, "Properties"), "RestApiId")); depAPI != "" && depAPI != api {
		c.errorf(value(props, "DeploymentId"), base+".Properties.DeploymentId", "deployment %s is of API %s, but the stage is of API %s: API Gateway refuses the stage; name a deployment of %s", dep.name, depAPI, api, api)
	}
}

// fifoBatchSize: Lambda refuses a mapping of a FIFO queue whose BatchSize is above 10
// (E3705).
func (c *checker) fifoBatchSize(props *yaml.Node, base string) {
	q := c.named(value(props, "EventSourceArn"), "AWS::SQS::Queue", "Arn")
	if q == nil {
		return
	}
	size, ok := propText(props, "BatchSize")
	n, err := strconv.Atoi(size)
	if fifo, known := fifoQueue(q); ok && err == nil && fifo && known && n > 10 {
		c.errorf(value(props, "BatchSize"), base+".Properties.BatchSize", "BatchSize %d is above 10, the most Lambda takes from FIFO queue %s: Lambda refuses the mapping", n, q.name)
	}
}

// instanceEngine: RDS refuses an instance of a cluster whose Engine is not the cluster's
// (E3707).
func (c *checker) instanceEngine(props *yaml.Node, base string) {
	cl := c.named(value(props, "DBClusterIdentifier"), "AWS::RDS::DBCluster", "")
	if cl == nil {
		return
	}
	mine, ok1 := propText(props, "Engine")
	theirs, ok2 := propText(value(cl.node, "Properties"), "Engine")
	if ok1 && ok2 && !strings.EqualFold(mine, theirs) {
		c.errorf(value(props, "Engine"), base+".Properties.Engine", "Engine %s is not the engine of its cluster %s (%s): RDS refuses the instance; give the cluster's engine", mine, cl.name, theirs)
	}
}

// pick is the value n takes when each condition of assign holds or not: the branch of
// each Fn::If (nested ones too) its condition chooses; nil for AWS::NoValue or a
// condition assign does not decide.
func pick(n *yaml.Node, assign map[string]bool, depth int) *yaml.Node {
	n = resolve(n)
	if n == nil || intrinsic(n) != "Fn::If" {
		return n
	}
	args := resolve(n.Content[1])
	if depth > 8 || args.Kind != yaml.SequenceNode || len(args.Content) != 3 {
		return nil
	}
	cond, ok := plainScalar(resolve(args.Content[0]))
	holds, decided := assign[cond]
	if !ok || !decided {
		return nil
	}
	b := resolve(args.Content[2])
	if holds {
		b = resolve(args.Content[1])
	}
	if isNoValue(b) {
		return nil
	}
	return pick(b, assign, depth+1)
}

// ifConditions adds the conditions of the Fn::If calls that choose n to names.
func ifConditions(n *yaml.Node, names map[string]bool, depth int) {
	n = resolve(n)
	if n == nil || intrinsic(n) != "Fn::If" || depth > 8 {
		return
	}
	args := resolve(n.Content[1])
	if args.Kind != yaml.SequenceNode || len(args.Content) != 3 {
		return
	}
	if cond, ok := plainScalar(resolve(args.Content[0])); ok {
		names[cond] = true
	}
	ifConditions(args.Content[1], names, depth+1)
	ifConditions(args.Content[2], names, depth+1)
}

// scenarios are the ways the conditions choosing the nodes can be, each condition true or
// false (at most 2^4: beyond four conditions, none).
func scenarios(nodes ...*yaml.Node) []map[string]bool {
	names := map[string]bool{}
	for _, n := range nodes {
		ifConditions(n, names, 0)
	}
	if len(names) > 4 {
		return nil
	}
	out := []map[string]bool{{}}
	for name := range names {
		var next []map[string]bool
		for _, s := range out {
			for _, v := range []bool{true, false} {
				m := map[string]bool{name: v}
				for k, x := range s {
					m[k] = x
				}
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

// scenarioText says when a scenario holds: "" when no condition chooses.
func scenarioText(s map[string]bool) string {
	if len(s) == 0 {
		return ""
	}
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s is %t", k, s[k]))
	}
	return " when " + strings.Join(parts, " and ")
}

// clusterMode: ElastiCache runs a Redis replication group of a parameter group with
// cluster-enabled yes in cluster mode, which requires automatic failover, and automatic
// failover a replica to fail over to ("NumCacheClusters must be greater than 1" for a
// group of one node): it refuses the group otherwise (cfn-lint's E3026).
func (c *checker) clusterMode(r *resource, props *yaml.Node, base string) {
	group, failover, nodes := value(props, "CacheParameterGroupName"), value(props, "AutomaticFailoverEnabled"), value(props, "NumCacheClusters")
	for _, s := range scenarios(group, failover, nodes) {
		pg := c.named(pick(group, s, 0), "AWS::ElastiCache::ParameterGroup", "")
		if pg == nil {
			continue
		}
		if mode, ok := propText(value(value(pg.node, "Properties"), "Properties"), "cluster-enabled"); !ok || mode != "yes" {
			continue
		}
		if f := pick(failover, s, 0); f != nil {
			if _, ok := plainScalar(f); ok && canonical(f) == "false" {
				c.errorf(f, base+".Properties.AutomaticFailoverEnabled", "replication group %s has parameter group %s of cluster mode (cluster-enabled: yes)%s, which requires AutomaticFailoverEnabled: true: ElastiCache refuses the group", r.name, pg.name, scenarioText(s))
			}
		}
		if n := pick(nodes, s, 0); n != nil {
			if v, ok := plainScalar(n); ok {
				if k, err := strconv.Atoi(v); err == nil && k <= 1 {
					c.errorf(n, base+".Properties.NumCacheClusters", "replication group %s has parameter group %s of cluster mode (cluster-enabled: yes)%s, whose automatic failover needs a replica, but NumCacheClusters is %d: ElastiCache refuses the group; set it above 1", r.name, pg.name, scenarioText(s), k)
				}
			}
		}
	}
}
