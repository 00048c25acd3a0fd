package template

import (
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// Resource attributes (AWS's "Resource attribute reference"): their values have shapes of
// their own, some per resource type. The shapes are those cfn-lint checks
// (cfnlint/data/schemas/other/resources/update_policy.json and its CreationPolicy rule),
// which follow AWS's documentation of each attribute.

var (
	boolean = resourcespec.NewShape(resourcespec.Boolean)
	integer = resourcespec.NewShape(resourcespec.Integer)
	str     = resourcespec.NewShape(resourcespec.String)

	resourceSignal = resourcespec.NewObject(map[string]*resourcespec.Shape{"Count": integer, "Timeout": str}, true)

	// creationPolicies are the CreationPolicy shapes of the types that take one.
	creationPolicies = map[string]*resourcespec.Shape{
		"AWS::AutoScaling::AutoScalingGroup": resourcespec.NewObject(map[string]*resourcespec.Shape{
			"AutoScalingCreationPolicy": resourcespec.NewObject(map[string]*resourcespec.Shape{"MinSuccessfulInstancesPercent": integer}, true),
			"ResourceSignal":            resourceSignal,
		}, true),
		"AWS::EC2::Instance":                 resourcespec.NewObject(map[string]*resourcespec.Shape{"ResourceSignal": resourceSignal}, true),
		"AWS::CloudFormation::WaitCondition": resourcespec.NewObject(map[string]*resourcespec.Shape{"ResourceSignal": resourceSignal}, true),
		"AWS::AppStream::Fleet":              resourcespec.NewObject(map[string]*resourcespec.Shape{"StartFleet": boolean}, true),
	}

	suspendProcesses = func() *resourcespec.Shape {
		s := resourcespec.NewShape(resourcespec.List)
		s.Elem = resourcespec.NewShape(resourcespec.String)
		s.Elem.Enum = []string{"Launch", "Terminate", "AddToLoadBalancer", "AlarmNotification", "AZRebalance", "HealthCheck", "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions"}
		return s
	}()
	appStreamUpdate = resourcespec.NewObject(map[string]*resourcespec.Shape{"Type": boolean}, true)
	searchUpdate    = resourcespec.NewObject(map[string]*resourcespec.Shape{"EnableVersionUpgrade": boolean}, true)

	// updatePolicies are the UpdatePolicy shapes of the types that take one.
	updatePolicies = map[string]*resourcespec.Shape{
		"AWS::AutoScaling::AutoScalingGroup": resourcespec.NewObject(map[string]*resourcespec.Shape{
			"AutoScalingReplacingUpdate": resourcespec.NewObject(map[string]*resourcespec.Shape{"WillReplace": boolean}, true),
			"AutoScalingRollingUpdate": resourcespec.NewObject(map[string]*resourcespec.Shape{
				"MaxBatchSize": integer, "MinActiveInstancesPercent": integer, "MinInstancesInService": integer,
				"MinSuccessfulInstancesPercent": integer, "PauseTime": str, "SuspendProcesses": suspendProcesses,
				"WaitOnResourceSignals": boolean,
			}, true),
			"AutoScalingScheduledAction": resourcespec.NewObject(map[string]*resourcespec.Shape{"IgnoreUnmodifiedGroupSizeProperties": boolean}, true),
		}, true),
		"AWS::Lambda::Alias": resourcespec.NewObject(map[string]*resourcespec.Shape{
			"CodeDeployLambdaAliasUpdate": resourcespec.NewObject(map[string]*resourcespec.Shape{
				"AfterAllowTrafficHook": str, "ApplicationName": str, "BeforeAllowTrafficHook": str, "DeploymentGroupName": str,
			}, true),
		}, false),
		"AWS::Elasticsearch::Domain":         searchUpdate,
		"AWS::OpenSearchService::Domain":     searchUpdate,
		"AWS::ElastiCache::ReplicationGroup": resourcespec.NewObject(map[string]*resourcespec.Shape{"UseOnlineResharding": boolean}, true),
		"AWS::AppStream::Fleet":              resourcespec.NewObject(map[string]*resourcespec.Shape{"StartAfterUpdate": appStreamUpdate, "StopBeforeUpdate": appStreamUpdate}, true),
	}

	// policyFunctions are the intrinsic functions a DeletionPolicy or UpdateReplacePolicy
	// may be computed with.
	policyFunctions = []string{"Ref", "Fn::If", "Fn::Sub", "Fn::Select", "Fn::FindInMap"}

	// snapshotTypes are the types whose DeletionPolicy or UpdateReplacePolicy may be
	// Snapshot.
	snapshotTypes = []string{"AWS::DocDB::DBCluster", "AWS::EC2::Volume", "AWS::ElastiCache::CacheCluster",
		"AWS::ElastiCache::ReplicationGroup", "AWS::Neptune::DBCluster", "AWS::RDS::DBCluster", "AWS::RDS::DBInstance",
		"AWS::Redshift::Cluster"}
)

// attributes checks the values of a resource's attributes other than Properties,
// DependsOn and Condition (which references checks).
func (c *checker) attributes(r *resource) {
	base := "Resources." + r.name
	custom := strings.HasPrefix(r.typ, "Custom::") || r.typ == "AWS::CloudFormation::CustomResource"
	for i := 0; i+1 < len(r.node.Content); i += 2 {
		k, v := r.node.Content[i], resolve(r.node.Content[i+1])
		path := base + "." + k.Value
		switch k.Value {
		case "DeletionPolicy", "UpdateReplacePolicy":
			if fn := intrinsic(v); fn != "" {
				if !slices.Contains(policyFunctions, fn) {
					c.errorf(v, path, "%s cannot be computed with %s: use a literal, or %s", k.Value, fn, strings.Join(policyFunctions, ", "))
				}
				continue // known at deployment
			}
			allowed := []string{"Delete", "Retain"}
			if k.Value == "DeletionPolicy" {
				allowed = append(allowed, "RetainExceptOnCreate")
			}
			if slices.Contains(snapshotTypes, r.typ) {
				allowed = append(allowed, "Snapshot")
			}
			switch {
			case v.Kind != yaml.ScalarNode:
				c.errorf(v, path, "must be one of %s, not %s", strings.Join(allowed, ", "), kindOf(v))
			case !slices.Contains(allowed, v.Value):
				hint := ""
				if v.Value == "Snapshot" {
					hint = ": " + r.typ + " keeps no snapshots"
				}
				c.errorf(v, path, "%q is not one of %s%s%s", v.Value, strings.Join(allowed, ", "), hint, Suggest(v.Value, allowed))
			}
		case "CreationPolicy", "UpdatePolicy":
			shapes := creationPolicies
			if k.Value == "UpdatePolicy" {
				shapes = updatePolicies
			}
			if custom {
				c.add(k, path, true, "a custom resource takes no %s: CloudFormation does not apply it", k.Value)
				continue
			}
			sh := shapes[r.typ]
			if sh == nil {
				if k.Value == "UpdatePolicy" {
					c.add(k, path, true, "%s takes no UpdatePolicy: CloudFormation applies one only to %s", r.typ, strings.Join(slices.Sorted(maps.Keys(updatePolicies)), ", "))
				}
				sh = resourcespec.NewShape(resourcespec.Object)
				sh.Closed = false
			}
			if v.Kind != yaml.MappingNode && v.Kind != yaml.ScalarNode || v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				c.errorf(k, path, "must be a mapping, not %s", kindOf(v))
				continue
			}
			// Fn::If chooses between mappings; a Ref gives a single value, refused.
			c.value(v, sh, path, k, valueCtx{typ: r.typ, where: k.Value})
		case "Metadata":
			if v.Kind != yaml.MappingNode || intrinsic(v) != "" {
				c.errorf(k, path, "must be a mapping, not %s", kindOf(v))
			}
		case "Version":
			if v.Kind != yaml.ScalarNode {
				c.errorf(k, path, "must be a version number, not %s", kindOf(v))
			}
		}
	}
}
