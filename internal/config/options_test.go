package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// TestHashCoversEveryOption sets each field of Options alone: each gives a hash of its
// own, so a stack option changed alone always updates its stack. A field left out of the
// hash (json:"-", or an early return that forgets it) fails here. StackPolicyPath is the
// one field left out on purpose: moving the policy's file changes nothing.
func TestHashCoversEveryOption(t *testing.T) {
	if h := (Options{}).Hash(); h != "" {
		t.Fatalf("no options hash to %q, want \"\" (stacks without options keep their inputs)", h)
	}
	seen := map[string]string{}
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var o Options
		v := reflect.ValueOf(&o).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(1)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		default:
			t.Fatalf("Options.%s is a %s: teach this test to set it", f.Name, f.Type)
		}
		h := o.Hash()
		if f.Name == "StackPolicyPath" {
			if h != "" {
				t.Errorf("StackPolicyPath alone hashes to %q: moving the policy's file would update the stack", h)
			}
			continue
		}
		if h == "" {
			t.Errorf("Options.%s set alone hashes to \"\": a change of it alone would never update a stack", f.Name)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("Options.%s and %s hash alike", f.Name, other)
		}
		seen[h] = f.Name
	}
}

// optionSamples are a valid value of each stack option, as cairn.yaml writes it.
var optionSamples = map[string]string{
	"stack_policy_path":      "policy.json",
	"notification_arns":      "[arn:aws:sns:eu-west-1:123456789012:stack-events]",
	"rollback_configuration": "{monitoring_time_in_minutes: 10, rollback_triggers: [arn:aws:cloudwatch:eu-west-1:123456789012:alarm:app-5xx]}",
	"timeout_in_minutes":     "30",
	"disable_rollback":       "true",
	"on_drift":               "revert",
}

// TestEveryStackOptionIsReadAndHashed loads a stack with each option of stackOptions alone:
// it is a key cairn.yaml takes, it is read into Options, and it changes the stack's hash.
func TestEveryStackOptionIsReadAndHashed(t *testing.T) {
	for _, o := range stackOptions {
		sample, ok := optionSamples[o.key]
		if !ok {
			t.Errorf("stack option %s has no sample in optionSamples: add one", o.key)
			continue
		}
		if !slices.Contains(stackKeys, o.key) {
			t.Errorf("stack option %s is not a key of a stack", o.key)
		}
		dir := t.TempDir()
		for name, body := range map[string]string{
			"cairn.yaml":  "namespace: shop\nstacks:\n  - name: app\n    template_path: app.yaml\n    " + o.key + ": " + sample + "\n",
			"app.yaml":    "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n",
			"policy.json": `{"Statement": [{"Effect": "Allow", "Action": "Update:*", "Principal": "*", "Resource": "*"}]}`,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := LoadOptions{}.Load(b)
		if err != nil {
			t.Errorf("%s: %v", o.key, err)
			continue
		}
		if c.Stack("app").Options.Hash() == "" {
			t.Errorf("%s: %s is not read into the stack's options (their hash is empty)", o.key, sample)
		}
	}
}

// TestCreateAndExecuteOptions: what the options send with each change set call.
func TestCreateAndExecuteOptions(t *testing.T) {
	ten := 10
	set := Options{StackPolicy: []byte(`{"Statement":[]}`), NotificationARNs: []string{"arn:aws:sns:eu-west-1:123456789012:events"},
		Rollback:         &Rollback{MonitoringTimeInMinutes: 10, Triggers: []Trigger{{ARN: "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:a", Type: "AWS::CloudWatch::Alarm"}}},
		TimeoutInMinutes: 30, DisableRollback: true}
	for _, tc := range []struct {
		name    string
		o       Options
		update  bool
		create  CreateOptions
		execute ExecuteOptions
	}{
		{name: "a create without options sends none", o: Options{}, create: CreateOptions{}, execute: ExecuteOptions{}},
		{name: "an update without options clears the stack's topics and triggers", o: Options{}, update: true,
			create: CreateOptions{NotificationARNs: []string{}, Rollback: true, RollbackTriggers: []Trigger{}}},
		{name: "a create sends every option", o: set,
			create:  CreateOptions{NotificationARNs: set.NotificationARNs, Rollback: true, MonitoringTimeInMinutes: &ten, RollbackTriggers: set.Rollback.Triggers},
			execute: ExecuteOptions{StackPolicy: `{"Statement":[]}`, DisableRollback: true}},
		{name: "an update sends them too, but never DisableRollback", o: set, update: true,
			create:  CreateOptions{NotificationARNs: set.NotificationARNs, Rollback: true, MonitoringTimeInMinutes: &ten, RollbackTriggers: set.Rollback.Triggers},
			execute: ExecuteOptions{StackPolicy: `{"Statement":[]}`}},
		{name: "on_drift revert makes an update's change set drift-aware", o: Options{OnDrift: DriftRevert}, update: true,
			create: CreateOptions{NotificationARNs: []string{}, Rollback: true, RollbackTriggers: []Trigger{}, DeploymentMode: RevertDrift}},
		{name: "on_drift refuse too: its drift shows there", o: Options{OnDrift: DriftRefuse}, update: true,
			create: CreateOptions{NotificationARNs: []string{}, Rollback: true, RollbackTriggers: []Trigger{}, DeploymentMode: RevertDrift}},
		{name: "a create has no drift", o: Options{OnDrift: DriftRevert}, create: CreateOptions{}},
	} {
		c, e := tc.o.Create(tc.update), tc.o.Execute(!tc.update)
		if !reflect.DeepEqual(c, tc.create) || e != tc.execute {
			t.Errorf("%s:\nCreate = %+v\nwant     %+v\nExecute = %+v, want %+v", tc.name, c, tc.create, e, tc.execute)
		}
	}
}
