package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ctxMap stands in for a construct node's context in tests that do not need
// a CDK app.
type ctxMap map[string]interface{}

func (m ctxMap) TryGetContext(key *string) interface{} { return m[*key] }

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name       string
		ctx        ctxMap
		namespaces string
		pools      string
		schedule   string
		role       string
		ssm        string
	}{
		{
			name:       "defaults with a JSON list from cdk.json",
			ctx:        ctxMap{ctxNamespaces: []interface{}{"shop"}},
			namespaces: "shop", pools: "default=20000-29999", schedule: "rate(1 day)", ssm: "/shop/*",
		},
		{
			name: "comma-separated strings from cdk -c",
			ctx: ctxMap{
				ctxNamespaces:     "web, shop",
				ctxPortPools:      "web=30000-30099,default=20000-29999",
				ctxDriftSchedule:  "rate(6 hours)",
				ctxCfnServiceRole: "arn:aws:iam::123456789012:role/cairn-cfn",
				ctxSSMPaths:       "/shared/zones, /shop/*,/shared/zones",
			},
			namespaces: "shop,web", pools: "default=20000-29999,web=30000-30099", schedule: "rate(6 hours)",
			role: "arn:aws:iam::123456789012:role/cairn-cfn", ssm: "/shared/zones,/shop/*",
		},
		{
			name:       "JSON list passed as a -c string, pools as an object, cron schedule",
			ctx:        ctxMap{ctxNamespaces: `["a","b-c"]`, ctxPortPools: map[string]interface{}{"x": "1-10", "y": "11-20"}, ctxDriftSchedule: "cron(0 6 * * ? *)"},
			namespaces: "a,b-c", pools: "x=1-10,y=11-20", schedule: "cron(0 6 * * ? *)", ssm: "/a/*,/b-c/*",
		},
		{
			name:       "empty service role means none, empty SSM paths no Parameter Store access",
			ctx:        ctxMap{ctxNamespaces: "shop", ctxCfnServiceRole: "", ctxSSMPaths: []interface{}{}},
			namespaces: "shop", pools: "default=20000-29999", schedule: "rate(1 day)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(tt.ctx)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if got := cfg.NamespacesEnv(); got != tt.namespaces {
				t.Errorf("namespaces = %q, want %q", got, tt.namespaces)
			}
			if got := cfg.PortPoolsEnv(); got != tt.pools {
				t.Errorf("pools = %q, want %q", got, tt.pools)
			}
			if cfg.DriftSchedule != tt.schedule {
				t.Errorf("schedule = %q, want %q", cfg.DriftSchedule, tt.schedule)
			}
			if cfg.CfnServiceRole != tt.role {
				t.Errorf("role = %q, want %q", cfg.CfnServiceRole, tt.role)
			}
			if got := strings.Join(cfg.SSMPaths, ","); got != tt.ssm {
				t.Errorf("SSM paths = %q, want %q", got, tt.ssm)
			}
			if cfg.LambdaDir != defaultLambdaDir {
				t.Errorf("lambda dir = %q, want %q", cfg.LambdaDir, defaultLambdaDir)
			}
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		ctx  ctxMap
		want []string // substrings of the error: the key, the value, the fix
	}{
		{"no namespaces", ctxMap{}, []string{ctxNamespaces, "is empty", "-c cairn:namespaces="}},
		{"bad namespace", ctxMap{ctxNamespaces: "shop,9lives"}, []string{ctxNamespaces, `"9lives"`, "starting with a letter"}},
		{"duplicate namespace", ctxMap{ctxNamespaces: "shop,shop"}, []string{`"shop" is listed twice`}},
		{"namespace not a string", ctxMap{ctxNamespaces: []interface{}{"shop", 3.0}}, []string{ctxNamespaces, "not a string"}},
		{"pool without range", ctxMap{ctxNamespaces: "a", ctxPortPools: "default"}, []string{ctxPortPools, `"default" is not NAME=FIRST-LAST`}},
		{"pool range reversed", ctxMap{ctxNamespaces: "a", ctxPortPools: "default=30000-20000"}, []string{`pool "default"`, "1 <= FIRST <= LAST <= 65535"}},
		{"pool out of range", ctxMap{ctxNamespaces: "a", ctxPortPools: "default=1-70000"}, []string{"1-70000"}},
		{"pools overlap", ctxMap{ctxNamespaces: "a", ctxPortPools: "a=100-200,b=200-300"}, []string{`"a" (100-200) and "b" (200-300) overlap`}},
		{"pool twice", ctxMap{ctxNamespaces: "a", ctxPortPools: "a=1-2,a=3-4"}, []string{`pool "a" is defined twice`}},
		{"no pools", ctxMap{ctxNamespaces: "a", ctxPortPools: ""}, []string{ctxPortPools, "no pools"}},
		{"bad schedule", ctxMap{ctxNamespaces: "a", ctxDriftSchedule: "every day"}, []string{ctxDriftSchedule, "every day", "rate(1 day)"}},
		{"bad role", ctxMap{ctxNamespaces: "a", ctxCfnServiceRole: "cairn-cfn"}, []string{ctxCfnServiceRole, "cairn-cfn", "arn:aws:iam::ACCOUNT:role/NAME"}},
		{"bad lambda dir", ctxMap{ctxNamespaces: "a", ctxLambdaDir: 3.0}, []string{ctxLambdaDir, "deployer/bootstrap"}},
		{"every parameter", ctxMap{ctxNamespaces: "a", ctxSSMPaths: "/*"}, []string{ctxSSMPaths, `"/*" is not a parameter name or path`, "/PATH/*"}},
		{"a wildcard inside a path", ctxMap{ctxNamespaces: "a", ctxSSMPaths: []interface{}{"/a/*/db"}}, []string{ctxSSMPaths, `"/a/*/db"`}},
		{"a relative name", ctxMap{ctxNamespaces: "a", ctxSSMPaths: "a/db"}, []string{ctxSSMPaths, `"a/db"`, "/NAME"}},
		{"SSM paths not strings", ctxMap{ctxNamespaces: "a", ctxSSMPaths: 7.0}, []string{ctxSSMPaths, "list of strings"}},
		{"SSM paths of another namespace", ctxMap{ctxNamespaces: "a", ctxSSMPaths: map[string]interface{}{"b": []interface{}{"/b/*"}}}, []string{ctxSSMPaths, `namespace "b" is not one of cairn:namespaces (a)`}},
		{"SSM paths object, bad path", ctxMap{ctxNamespaces: "a", ctxSSMPaths: `{"a": ["/*"]}`}, []string{ctxSSMPaths, `"/*" is not a parameter name or path`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.ctx)
			if err == nil {
				t.Fatal("LoadConfig succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestCDKJSON checks the shipped cdk.json: the CDK CLI can run the app, and
// its context is a valid configuration (make synth reads it through main).
func TestCDKJSON(t *testing.T) {
	ctx, err := cdkJSONContext("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(ctxMap(ctx))
	if err != nil {
		t.Fatalf("cdk.json context: %v", err)
	}
	if cfg.LambdaDir != "../bin/lambda" || len(cfg.Namespaces) == 0 {
		t.Errorf("cdk.json: lambda dir %q, namespaces %v; want ../bin/lambda (where make build writes) and at least one namespace", cfg.LambdaDir, cfg.Namespaces)
	}
	b, err := os.ReadFile("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ App string }
	if err := json.Unmarshal(b, &f); err != nil || f.App != "go run ." {
		t.Errorf("cdk.json app = %q (%v), want \"go run .\"", f.App, err)
	}
	if _, err := cdkJSONContext("testdata/missing.json"); err == nil || !strings.Contains(err.Error(), "run from the infra folder") {
		t.Errorf("missing cdk.json: err = %v, want a hint to run from infra/", err)
	}
}
