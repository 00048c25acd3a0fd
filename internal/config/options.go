package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Options are a stack's CloudFormation stack options, passed with its change sets and
// kept in sync on update. Adding one: its field here (Hash covers every field), its row of
// stackOptions (the key of cairn.yaml and how it is read), and what it sends in Create or
// Execute (changeset passes those to CloudFormation).
type Options struct {
	// StackPolicyPath is the bundle file of the stack policy; StackPolicy its JSON, set
	// (SetStackPolicy) before every change set of the stack is executed.
	StackPolicyPath string `json:",omitempty"`
	StackPolicy     []byte `json:",omitempty"`
	// NotificationARNs are SNS topics CloudFormation publishes the stack's events to.
	NotificationARNs []string `json:",omitempty"`
	// Rollback holds CloudFormation's rollback triggers; nil when not configured.
	Rollback *Rollback `json:",omitempty"`
	// TimeoutInMinutes bounds a create: cairn fails the stack in the run when its create
	// runs longer (change sets take no timeout of their own). 0: none.
	TimeoutInMinutes int `json:",omitempty"`
	// DisableRollback keeps a failed create's resources (CREATE_FAILED) for debugging;
	// `cairn recover NAME STACK --rollback` is the way out.
	DisableRollback bool `json:",omitempty"`
	// OnDrift is what an update does with properties changed outside cairn (on_drift):
	// DriftKeep ("", the default) leaves them to CloudFormation's ordinary change sets,
	// DriftRevert brings them back (drift-aware change sets), DriftRefuse stops the
	// stack's plan or push while it has drift.
	OnDrift DriftMode `json:",omitempty"`
}

// DriftMode is a stack's on_drift.
type DriftMode string

// The values of on_drift. DriftKeep is stored as "", so a config that names the default
// hashes as one that does not.
const (
	DriftKeep   DriftMode = ""
	DriftRevert DriftMode = "revert"
	DriftRefuse DriftMode = "refuse"
)

// driftModes are on_drift's values as cairn.yaml writes them.
var driftModes = []string{"revert", "keep", "refuse"}

// RevertDrift is CloudFormation's DeploymentMode of a drift-aware change set.
const RevertDrift = "REVERT_DRIFT"

// Rollback is a rollback configuration: alarms CloudFormation watches during an update
// and for MonitoringTimeInMinutes after it, rolling back when one goes to ALARM.
type Rollback struct {
	MonitoringTimeInMinutes int       `json:",omitempty"`
	Triggers                []Trigger `json:",omitempty"`
}

// Trigger is one rollback trigger: an alarm's ARN and type.
type Trigger struct {
	ARN, Type string
}

// Hash identifies the options, every field of them, so a change of any alone updates the
// stack; "" when the stack has none (stacks without options keep the inputs they had).
func (o Options) Hash() string {
	cp := o
	cp.StackPolicyPath = "" // moving the file changes nothing
	b, _ := json.Marshal(cp)
	if string(b) == "{}" {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// CreateOptions are what a stack's options send with CreateChangeSet.
type CreateOptions struct {
	// NotificationARNs: nil sends none (the stack keeps its topics); an empty list clears
	// the stack's.
	NotificationARNs []string
	// Rollback says a rollback configuration is sent: MonitoringTimeInMinutes (nil: not
	// sent) and RollbackTriggers (empty: the stack's are cleared).
	Rollback                bool
	MonitoringTimeInMinutes *int
	RollbackTriggers        []Trigger
	// DeploymentMode is RevertDrift for an update of a stack whose on_drift is revert or
	// refuse (a drift-aware change set shows the drift refuse stops on); "" else.
	DeploymentMode string
}

// Create returns what the options send with CreateChangeSet. An update (update true)
// clears the topics and triggers the config no longer names, so the stack keeps in sync:
// an empty list of triggers removes the stack's, where none at all would keep them.
func (o Options) Create(update bool) CreateOptions {
	var c CreateOptions
	if len(o.NotificationARNs) > 0 || update {
		c.NotificationARNs = append([]string{}, o.NotificationARNs...)
	}
	if o.Rollback != nil || update {
		c.Rollback, c.RollbackTriggers = true, []Trigger{}
	}
	if rb := o.Rollback; rb != nil {
		c.MonitoringTimeInMinutes = &rb.MonitoringTimeInMinutes
		c.RollbackTriggers = append(c.RollbackTriggers, rb.Triggers...)
	}
	if update && (o.OnDrift == DriftRevert || o.OnDrift == DriftRefuse) {
		c.DeploymentMode = RevertDrift
	}
	return c
}

// ExecuteOptions are what a stack's options send with ExecuteChangeSet.
type ExecuteOptions struct {
	// StackPolicy is set (SetStackPolicy) before the execution; "" none.
	StackPolicy string
	// DisableRollback keeps a failed create's resources.
	DisableRollback bool
}

// Execute returns what the options send with ExecuteChangeSet: the stack policy, and
// DisableRollback for a change set that creates the stack (create true).
func (o Options) Execute(create bool) ExecuteOptions {
	return ExecuteOptions{StackPolicy: string(o.StackPolicy), DisableRollback: o.DisableRollback && create}
}

// stackOption is one stack option of cairn.yaml: its key, and how it is read into Options.
type stackOption struct {
	key    string
	decode func(l *loader, o *Options, f field)
}

// stackOptions are the stack options cairn.yaml takes, in the order messages list them.
var stackOptions = []stackOption{
	{"stack_policy_path", (*loader).stackPolicy},
	{"notification_arns", (*loader).notificationARNs},
	{"rollback_configuration", (*loader).rollbackConfiguration},
	{"timeout_in_minutes", (*loader).timeoutInMinutes},
	{"disable_rollback", func(l *loader, o *Options, f field) { o.DisableRollback, _ = l.boolean(f.v, f.key) }},
	{"on_drift", (*loader).onDrift},
}

// optionKeys are the keys of stackOptions.
func optionKeys() []string {
	keys := make([]string, len(stackOptions))
	for i, o := range stackOptions {
		keys[i] = o.key
	}
	return keys
}

// CloudFormation's limits on stack options.
const (
	maxNotificationARNs = 5
	maxRollbackTriggers = 5
	maxMonitoringTime   = 180
	maxStackPolicy      = 16384
)

var (
	snsARNRE   = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)
	alarmARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:cloudwatch:[a-z0-9-]+:\d{12}:alarm:.+$`)
)

var (
	rollbackKeys = []string{"monitoring_time_in_minutes", "rollback_triggers"}
	triggerKeys  = []string{"arn", "type"}
	triggerTypes = []string{"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"}
)

// option decodes the stack option f of d (a key fields admitted: one of stackOptions).
func (l *loader) option(d *stackDef, f field) {
	for _, o := range stackOptions {
		if o.key == f.name {
			o.decode(l, &d.s.Options, f)
			return
		}
	}
}

func (l *loader) stackPolicy(o *Options, f field) {
	p, ok := l.str(f.v, f.key)
	if !ok {
		return
	}
	o.StackPolicyPath = p
	body, err := l.bundleFile("stack policy", "policies/app.json", "bundle a directory", p)
	if err != nil {
		l.errorf(f.v, f.key, "%v", err)
		return
	}
	if msg := checkPolicy(body); msg != "" {
		l.errorf(f.v, f.key, "stack policy %s %s", p, msg)
		return
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, body)
	o.StackPolicy = buf.Bytes()
}

func (l *loader) notificationARNs(o *Options, f field) {
	arns, nodes := l.strs(f.v, f.key)
	if len(arns) > maxNotificationARNs {
		l.errorf(f.v, f.key, "%d topics, more than CloudFormation's %d", len(arns), maxNotificationARNs)
	}
	for i, a := range arns {
		if !snsARNRE.MatchString(a) {
			l.errorf(nodes[i], fmt.Sprintf("%s[%d]", f.key, i), "%q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:TOPIC)", a)
		}
	}
	o.NotificationARNs = arns
}

func (l *loader) rollbackConfiguration(o *Options, f field) {
	r := &Rollback{}
	o.Rollback = r
	for _, g := range l.fields(f.v, f.key, rollbackKeys) {
		switch g.name {
		case "monitoring_time_in_minutes":
			if n, ok := l.integer(g.v, g.key); ok {
				if n < 0 || n > maxMonitoringTime {
					l.errorf(g.v, g.key, "must be 0 to %d minutes, got %d", maxMonitoringTime, n)
				}
				r.MonitoringTimeInMinutes = n
			}
		case "rollback_triggers":
			r.Triggers = l.triggers(g)
		}
	}
}

func (l *loader) onDrift(o *Options, f field) {
	v, ok := l.str(f.v, f.key)
	if !ok {
		return
	}
	if !slices.Contains(driftModes, v) {
		l.errorf(f.v, f.key, "unknown value %q: use %s (what an update does with properties changed outside cairn)", v, strings.Join(driftModes, ", "))
		return
	}
	if v != "keep" {
		o.OnDrift = DriftMode(v)
	}
}

func (l *loader) timeoutInMinutes(o *Options, f field) {
	if n, ok := l.integer(f.v, f.key); ok {
		if n < 1 {
			l.errorf(f.v, f.key, "must be at least 1 minute, got %d", n)
		}
		o.TimeoutInMinutes = n
	}
}

// triggers decodes rollback_triggers: alarm ARNs, or mappings of arn and type.
func (l *loader) triggers(g field) []Trigger {
	n := resolve(g.v)
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, g.key, "must be a list of alarm ARNs or of {arn, type}, got %s", describe(n))
		return nil
	}
	if len(n.Content) > maxRollbackTriggers {
		l.errorf(n, g.key, "%d triggers, more than CloudFormation's %d", len(n.Content), maxRollbackTriggers)
	}
	var out []Trigger
	for i, c := range n.Content {
		key := g.key + "[" + strconv.Itoa(i) + "]"
		c = resolve(c)
		t := Trigger{Type: triggerTypes[0]}
		at := c
		if c.Kind == yaml.ScalarNode {
			t.ARN, _ = l.str(c, key)
		} else {
			for _, h := range l.fields(c, key, triggerKeys) {
				switch h.name {
				case "arn":
					t.ARN, _ = l.str(h.v, h.key)
					at = h.v
				case "type":
					if v, ok := l.str(h.v, h.key); ok {
						if !slices.Contains(triggerTypes, v) {
							l.errorf(h.v, h.key, "unknown trigger type %q: use %s", v, strings.Join(triggerTypes, " or "))
						}
						t.Type = v
					}
				}
			}
		}
		if !alarmARNRE.MatchString(t.ARN) {
			l.errorf(at, key, "%q is not a CloudWatch alarm ARN (arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME)", t.ARN)
		}
		out = append(out, t)
	}
	return out
}

// checkPolicy says what is wrong with a stack policy document, or "".
func checkPolicy(body []byte) string {
	if len(body) > maxStackPolicy {
		return fmt.Sprintf("is %d bytes, more than CloudFormation's %d", len(body), maxStackPolicy)
	}
	var doc struct {
		Statement []map[string]any
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(body, int(se.Offset)-1) // Offset is past the bad byte
			return fmt.Sprintf("is not JSON (%d:%d): %v", line, col, err)
		}
		return "is not a policy document: " + err.Error()
	}
	if len(doc.Statement) == 0 {
		return `has no Statement: a stack policy is {"Statement": [{"Effect": ..., "Action": "Update:*", "Principal": "*", "Resource": ...}]}`
	}
	for i, st := range doc.Statement {
		if e, _ := st["Effect"].(string); e != "Allow" && e != "Deny" {
			return fmt.Sprintf("Statement[%d]: Effect must be Allow or Deny", i)
		}
		_, a := st["Action"]
		_, na := st["NotAction"]
		_, r := st["Resource"]
		_, nr := st["NotResource"]
		if !a && !na || !r && !nr {
			return fmt.Sprintf("Statement[%d] needs an Action (or NotAction) and a Resource (or NotResource)", i)
		}
	}
	return ""
}
