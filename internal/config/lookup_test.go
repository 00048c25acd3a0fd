package config

import (
	"archive/zip"
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/seal"
)

// lookupTemplate takes the parameters the lookup tests fill.
const lookupTemplate = `Parameters:
  A: {Type: String, Default: ""}
  B: {Type: String, Default: ""}
  Size: {Type: Number, Default: 1}
  Password: {Type: String, NoEcho: true, Default: ""}
Resources:
  Queue:
    Type: AWS::SQS::Queue
Outputs:
  Url: {Value: !Ref Queue}
  Subnets: {Value: a}
`

// zipBundle zips files (cairn.yaml among them, templates/app.yaml added) into a bundle.
func zipBundle(t testing.TB, files map[string]string) *bundle.Bundle {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	all := maps.Clone(files)
	if _, ok := all["templates/app.yaml"]; !ok {
		all["templates/app.yaml"] = lookupTemplate
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(all[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.FromZip(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oneStack is a config of stack "app" (and "db") with the given parameters block.
func oneStack(params string) string {
	return `namespace: shop
variables: {env: prod, region: eu-west-1}
stacks:
  - name: db
    template_path: templates/app.yaml
  - name: app
    template_path: templates/app.yaml
    parameters:
` + params
}

func TestLookupErrors(t *testing.T) {
	tests := []struct {
		name   string
		params string
		files  map[string]string
		want   []string
	}{
		{"unknown lookup", "      A: ${secrets db/pw}\n", nil, []string{
			`9:10: stacks[1].parameters.A: unknown lookup ${secrets db/pw}: cairn supports ${output}, ${xref}, ${rxref}, ${cfn}, ${ssm}, ${var}, ${file}, ${split}, ${join}`}},
		{"unknown lookup suggested", "      A: x-${fil plain:a.txt}\n", nil, []string{
			`9:12: stacks[1].parameters.A: unknown lookup ${fil plain:a.txt} (did you mean "file"?): cairn supports ${output}, ${xref}, ${rxref}, ${cfn}, ${ssm}, ${var}, ${file}, ${split}, ${join}`}},
		{"unclosed", "      A: ${ssm /app/db\n", nil, []string{
			`9:10: stacks[1].parameters.A: lookup "${ssm /app/db" is not closed: add }`}},
		{"unclosed nested", "      A: \"${split ,::${output db::Url}\"\n", nil, []string{
			`9:10: stacks[1].parameters.A: lookup "${split ,::${output db::Url}" is not closed: add }`}},
		{"output malformed", "      A: ${output db}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${output db}: write ${output STACK::Output}`}},
		{"output unknown stack", "      A: ${output dbs::Url}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${output dbs::Url} names unknown stack "dbs" (did you mean "db"?)`}},
		{"output unknown output", "      A: ${output db::URL}\n", nil, []string{
			`9:10: stacks[1].parameters.A: stack db has no output "URL": its template declares Subnets, Url`}},
		{"xref malformed", "      A: ${xref other.Url}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${xref other.Url}: write ${xref FULL-STACK-NAME::Output}`}},
		{"rxref of a config stack", "      A: ${rxref db::Url}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${rxref db::Url} names stack db of this config: write ${output db::Url}, which also deploys db first`}},
		{"rxref malformed", "      A: ${rxref legacy.Url}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${rxref legacy.Url}: write ${rxref STACK::Output (a stack of this namespace outside this config)}`}},
		{"cfn malformed", "      A: ${cfn legacy-vpc::VpcId}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${cfn legacy-vpc::VpcId}: write ${cfn FULL-STACK-NAME.Output}`}},
		{"ssm bad name", "      A: ${ssm app db}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${ssm app db}: an SSM parameter name holds only letters, digits and _.-/ (at most 2048), with an optional :VERSION`}},
		{"ssm relative path", "      A: ${ssm app/db}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${ssm app/db}: a parameter name with / must start with /: write ${ssm /app/db}`}},
		{"ssm name from a deploy-time lookup", "      A: ${ssm /${output db::Url}}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${ssm /${output db::Url}}: the arguments of ${ssm} must be known when the bundle is loaded: only ${var} and ${file} can be nested there`}},
		{"unknown variable", "      A: ${var stage}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${var stage}: unknown variable stage: define it under variables: in the config or in the --var-file, or give a default with ${var stage::DEFAULT}`}},
		{"variable malformed", "      A: ${var 9lives}\n", nil, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${var 9lives}: write ${var NAME} or ${var NAME::default}, NAME being letters, digits and _.-`}},
		{"file missing", "      A: ${file plain:data/a.txt}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${file plain:data/a.txt}: file "data/a.txt" not found in the bundle`}},
		{"file leaves the bundle", "      A: ${file plain:../secret.txt}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${file plain:../secret.txt}: file path "../secret.txt" leaves the bundle: give a path relative to the bundle root, such as data/user-data.sh`}},
		{"file absolute", "      A: ${file plain:file:///etc/passwd}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${file plain:file:///etc/passwd}: file path "/etc/passwd" leaves the bundle: give a path relative to the bundle root, such as data/user-data.sh`}},
		{"file codec", "      A: ${file text:a.txt}\n", map[string]string{"a.txt": "x"}, []string{
			`9:10: stacks[1].parameters.A: unknown codec "text" of ${file text:a.txt}: use plain, base64, json, yaml`}},
		{"file codec suggested", "      A: ${file jsno:a.json}\n", map[string]string{"a.json": "{}"}, []string{
			`9:10: stacks[1].parameters.A: unknown codec "jsno" of ${file jsno:a.json} (did you mean "json"?): use plain, base64, json, yaml`}},
		{"file no codec", "      A: ${file a.txt}\n", map[string]string{"a.txt": "x"}, []string{
			`9:10: stacks[1].parameters.A: malformed lookup ${file a.txt}: write ${file CODEC:PATH}, CODEC being plain, base64, json, yaml`}},
		{"file bad json", "      A: ${file json:a.json}\n", map[string]string{"a.json": "{\n  \"a\": 1,\n}"}, []string{
			`9:10: stacks[1].parameters.A: ${file json:a.json}: file a.json:3:1: invalid JSON: invalid character '}' looking for beginning of object key string`}},
		{"file bad yaml", "      A: ${file yaml:a.yaml}\n", map[string]string{"a.yaml": "a: [1\n"}, []string{
			`9:10: stacks[1].parameters.A: ${file yaml:a.yaml}: file a.yaml: invalid YAML: line 1: did not find expected ',' or ']'`}},
		{"file not text", "      A: ${file plain:a.bin}\n", map[string]string{"a.bin": "\xff\xfe"}, []string{
			`9:10: stacks[1].parameters.A: ${file plain:a.bin}: file a.bin is not UTF-8 text: use ${file base64:a.bin}`}},
		{"file too large for a parameter", "      A: ${file plain:a.txt}\n", map[string]string{"a.txt": strings.Repeat("x", 5000)}, []string{
			`9:10: stacks[1].parameters.A: parameter A: value is 5000 bytes, more than CloudFormation's 4096 (template templates/app.yaml)`}},
		{"split without delimiter", "      A: ${split a,b}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${split a,b}: malformed lookup: write ${split DELIMITER::VALUE}, the delimiter written out`}},
		{"join without delimiter", "      A: ${join a}\n", nil, []string{
			`9:10: stacks[1].parameters.A: ${join a}: malformed lookup: write ${join DELIMITER::VALUE[::VALUE...]}, the delimiter written out`}},
		{"variable breaks the template", "      Size: ${var env}\n", nil, []string{
			`9:13: stacks[1].parameters.Size: parameter Size: value "prod" is not a number (the parameter is a Number) (template templates/app.yaml)`}},
		{"several errors, each located", "      A: ok-${var nope}\n      B: ${output db::Nope}-${ssm x y}\n", nil, []string{
			`9:13: stacks[1].parameters.A: ${var nope}: unknown variable nope: define it under variables: in the config or in the --var-file, or give a default with ${var nope::DEFAULT}`,
			`10:29: stacks[1].parameters.B: malformed lookup ${ssm x y}: an SSM parameter name holds only letters, digits and _.-/ (at most 2048), with an optional :VERSION`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"cairn.yaml": oneStack(tt.params)}
			maps.Copy(files, tt.files)
			_, err := Load(zipBundle(t, files))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load = %v, want errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, strings.TrimPrefix(e.Error(), "cairn.yaml:"))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLookupValues(t *testing.T) {
	files := map[string]string{
		"cairn.yaml": `namespace: shop
variables: {env: prod, size: 3}
tags:
  env: ${var env}
  owner: ${ssm /org/owner}
stacks:
  - name: db
    template_path: templates/app.yaml
    tags: {owner: dba}
  - name: app
    template_path: templates/app.yaml
    parameters:
      A: ${file plain:data/motd.txt}|${file base64:data/motd.txt}|${file json:data/p.json}|${file yaml:data/p.yaml}
      B: ${join ;::${split ,::${output db::Subnets}}::${ssm /${var env}/extra}}-${var missing::fallback}-${var env::unused}
      Size: ${var size}
      Password: ${ssm /${var env}/db/password}
    tags:
      link: https://${cfn legacy-api.Host}/${rxref legacy::Path}/${xref other-stack::Id}
`,
		"data/motd.txt": "hello ${var env}\n",
		"data/p.json":   "{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": []\n}\n",
		"data/p.yaml":   "b: [1, two]\na: {c: true}\n",
		bundle.VarsName: "env: staging\n",
	}
	c, err := Load(zipBundle(t, files))
	if err != nil {
		t.Fatal(err)
	}
	app, db := c.Stack("app"), c.Stack("db")
	if got := c.SSMNames(); !slices.Equal(got, []string{"/org/owner", "/staging/db/password", "/staging/extra"}) {
		t.Errorf("SSMNames = %q", got)
	}
	if got := db.SSMNames(); got != nil {
		t.Errorf("db reads %q: its own owner tag overrides the config's", got)
	}
	var kinds []string
	for _, l := range app.Lookups {
		kinds = append(kinds, string(l.Kind)+" "+l.Param+l.Tag+" "+cmpOr(l.StackName, l.Name))
	}
	want := []string{
		"var env env", "cfn link legacy-api", "rxref link shop-legacy", "xref link other-stack", "ssm owner /org/owner",
		"file A plain:data/motd.txt", "file A base64:data/motd.txt", "file A json:data/p.json", "file A yaml:data/p.yaml",
		"output B shop-db", "var B env", "ssm B /staging/extra", "var B missing", "var B env",
		"var Password env", "ssm Password /staging/db/password", "var Size size",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("lookups:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	if g, _ := c.Graph(); !slices.Equal(g.Dependencies("app"), []string{"db"}) {
		t.Errorf("app depends on %v, want [db]", g.Dependencies("app"))
	}

	// At deploy time: the recorded var and file values and the data the deployer read.
	outputs := map[string]string{"shop-db/Subnets": "s-1,s-2", "legacy-api/Host": "api.example.com", "shop-legacy/Path": "v1", "other-stack/Id": "42"}
	vals := Values{
		Outputs: func(stack, output string) (string, bool) { v, ok := outputs[stack+"/"+output]; return v, ok },
		SSM: map[string]SSMValue{
			"/org/owner":           NewSSMValue(seal.Unkeyed, "/org/owner", "String", "platform", 1),
			"/staging/extra":       NewSSMValue(seal.Unkeyed, "/staging/extra", "StringList", "x,y", 2),
			"/staging/db/password": NewSSMValue(seal.Unkeyed, "/staging/db/password", SecureString, "hunter2", 7),
		},
	}
	params, err := ResolveParameters(app, vals)
	if err != nil {
		t.Fatal(err)
	}
	sealed := "{{cairn:ssm-secure:/staging/db/password@" + secretHash(seal.Unkeyed, "/staging/db/password", "hunter2") + "}}"
	wantParams := map[string]string{
		"A":        "hello ${var env}\n|aGVsbG8gJHt2YXIgZW52fQo=|{\"Version\":\"2012-10-17\",\"Statement\":[]}|{\"a\":{\"c\":true},\"b\":[1,\"two\"]}",
		"B":        "s-1;s-2;x;y-fallback-staging",
		"Size":     "3",
		"Password": sealed,
	}
	if !maps.Equal(params, wantParams) {
		t.Errorf("parameters:\n%q\nwant\n%q", params, wantParams)
	}
	if got := SecretParameters(app, vals); !maps.EqualFunc(got, map[string][]string{"Password": {"/staging/db/password"}}, slices.Equal) {
		t.Errorf("SecretParameters = %v", got)
	}
	tags, err := ResolveTags(app, vals)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"env": "staging", "owner": "platform", "link": "https://api.example.com/v1/42"}; !maps.Equal(tags, want) {
		t.Errorf("tags = %v, want %v", tags, want)
	}

	// Unsealed just before CloudFormation: the value, and only if it is the one resolved.
	if got := Sealed(params); !slices.Equal(got, []string{"/staging/db/password"}) {
		t.Errorf("Sealed = %q", got)
	}
	plain, err := Unseal(params, Plain{SSM: map[string]string{"/staging/db/password": "hunter2"}})
	if err != nil || plain["Password"] != "hunter2" || plain["B"] != params["B"] {
		t.Errorf("Unseal = %v, %v", plain, err)
	}
	_, err = Unseal(params, Plain{SSM: map[string]string{"/staging/db/password": "hunter3"}})
	if want := "parameter Password: SecureString /staging/db/password changed since the run resolved it: push again to deploy the new value"; err == nil || err.Error() != want {
		t.Errorf("Unseal of a changed value = %v, want %q", err, want)
	}
	if _, err := Unseal(params, Plain{}); err == nil || !strings.Contains(err.Error(), "is gone from SSM") {
		t.Errorf("Unseal of a deleted value = %v", err)
	}

	// A missing SSM parameter or output fails resolution, naming each.
	delete(vals.SSM, "/staging/extra")
	delete(outputs, "legacy-api/Host")
	_, err = ResolveParameters(app, vals)
	if want := "stack app: parameter B: ${ssm /${var env}/extra}: SSM parameter /staging/extra not found: create it (aws ssm put-parameter --name /staging/extra --type String --value ...) or fix the name"; err == nil || err.Error() != want {
		t.Errorf("ResolveParameters = %v, want %q", err, want)
	}
	_, err = ResolveTags(app, vals)
	if want := "stack app: tag link: ${cfn legacy-api.Host}: stack legacy-api does not exist or has no output Host: it is not deployed by this config; deploy it first or fix the name"; err == nil || err.Error() != want {
		t.Errorf("ResolveTags = %v, want %q", err, want)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestSecretsStayOutOfReach(t *testing.T) {
	vals := Values{SSM: map[string]SSMValue{"/pw": NewSSMValue(seal.Unkeyed, "/pw", SecureString, "s3cret", 1)}}
	if v := vals.SSM["/pw"]; v.Value != "" || v.Hash == "" || strings.Contains(v.Hash, "s3cret") {
		t.Errorf("kept %+v", v)
	}
	tests := []struct {
		name, params, tags, want string
	}{
		{"split of a secret", "      A: ${split ,::${ssm /pw}}\n", "", "stack app: parameter A: ${split ,::${ssm /pw}}: a SecureString cannot be split: its parts would be stored in plain text"},
		{"a secret in a tag", "      A: x\n", "    tags: {t: \"${ssm /pw}\"}\n", "stack app: tag t reads SecureString /pw: tags are shown to anyone who can describe the stack, so cairn never puts a secret there: use a String parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(zipBundle(t, map[string]string{"cairn.yaml": oneStack(tt.params) + tt.tags}))
			if err != nil {
				t.Fatal(err)
			}
			_, perr := ResolveParameters(c.Stack("app"), vals)
			_, terr := ResolveTags(c.Stack("app"), vals)
			if err := errors.Join(perr, terr); err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	// A refused value is never shown, NoEcho or not.
	c, err := Load(zipBundle(t, map[string]string{"cairn.yaml": oneStack("      Size: ${ssm /pw}\n")}))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckResolved(c.Stack("app"), map[string]string{"Size": "s3cret"}, "Size")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "(NoEcho, not shown)") {
		t.Errorf("CheckResolved = %v", err)
	}
}

func TestVarFile(t *testing.T) {
	cfg := oneStack("      A: ${var env}-${var region}\n")
	tests := []struct {
		name  string
		files map[string]string
		opts  LoadOptions
		want  string
		err   string
	}{
		{"config variables", nil, LoadOptions{}, "prod-eu-west-1", ""},
		{"bundle var file wins", map[string]string{bundle.VarsName: "env: dev\n"}, LoadOptions{}, "dev-eu-west-1", ""},
		{"given var file wins over the bundle's", map[string]string{bundle.VarsName: "env: dev\n"}, LoadOptions{Vars: []byte("region: us-east-1\n"), VarsFile: "prod.yaml"}, "prod-us-east-1", ""},
		{"empty var file", map[string]string{bundle.VarsName: ""}, LoadOptions{}, "prod-eu-west-1", ""},
		{"var file not a mapping", nil, LoadOptions{Vars: []byte("- a\n"), VarsFile: "vars.yaml"}, "", "vars.yaml:1:1: a var file must be a mapping of variable names to values, got a list"},
		{"var file value a list", nil, LoadOptions{Vars: []byte("env: [a]\n"), VarsFile: "vars.yaml"}, "", "vars.yaml:1:6: env: must be a string, number or boolean (a variable holds text), got a list"},
		{"var file invalid", nil, LoadOptions{Vars: []byte("env: [a\n"), VarsFile: "vars.yaml"}, "", "vars.yaml:1:1: invalid YAML: did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"cairn.yaml": cfg}
			maps.Copy(files, tt.files)
			c, err := tt.opts.Load(zipBundle(t, files))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Load = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := ResolveParameters(c.Stack("app"), Values{})
			if err != nil || got["A"] != tt.want {
				t.Errorf("A = %q, %v, want %q", got["A"], err, tt.want)
			}
		})
	}
}

func TestTagLookupErrors(t *testing.T) {
	tests := []struct{ name, cfg, want string }{
		{"output in the config's tags", "namespace: shop\ntags: {v: \"${output db::Url}\"}\nstacks:\n  - {name: db, template_path: templates/app.yaml}\n",
			"cairn.yaml:2:11: tags.v: the config's tags cannot read ${output db::Url}: every stack would depend on stack db; put the tag on the stacks that need it"},
		{"tag too long", "namespace: shop\nvariables: {long: " + strings.Repeat("x", 300) + "}\nstacks:\n  - {name: db, template_path: templates/app.yaml, tags: {v: \"${var long}\"}}\n",
			"cairn.yaml:4:61: stacks[0].tags.v: tag value is 300 characters, more than CloudFormation's 256"},
		{"unknown lookup in a tag", "stacks:\n  - name: db\n    template_path: templates/app.yaml\n    tags: {v: \"${sm /x}\"}\n",
			"cairn.yaml:4:15: stacks[0].tags.v: unknown lookup ${sm /x} (did you mean \"ssm\"?): cairn supports ${output}, ${xref}, ${rxref}, ${cfn}, ${ssm}, ${var}, ${file}, ${split}, ${join}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(zipBundle(t, map[string]string{"cairn.yaml": tt.cfg}))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Load = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// FuzzLookup parses and evaluates arbitrary values, at load and at deploy: no panic, an
// error or a value, and a SecureString never comes out unsealed. Seeds come from
// testdata/fuzz/FuzzLookup at the repository root.
func FuzzLookup(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzLookup/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzLookup (%v)", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	vals := Values{
		Outputs: func(stack, output string) (string, bool) { return stack + "." + output, stack != "" },
		SSM: map[string]SSMValue{
			"/a": NewSSMValue(seal.Unkeyed, "/a", "String", "x,y", 1), "/l": NewSSMValue(seal.Unkeyed, "/l", "StringList", "p,q", 1),
			"/s": NewSSMValue(seal.Unkeyed, "/s", SecureString, "TOPSECRET", 1),
		},
	}
	f.Fuzz(func(t *testing.T, v string) {
		if len(v) > 4096 {
			return
		}
		parts, err := parseValue(v)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(v) {
				t.Fatalf("parseValue(%q): %v is not a located SyntaxError", v, err)
			}
			return
		}
		e := &evaluator{load: true, vars: func(n string) (string, bool) { return "V", n == "env" }, readFile: func(string) (string, error) { return "F", nil }}
		got, err := e.eval(parts)
		if err != nil {
			return
		}
		s := &Stack{Name: "app", Parameters: map[string]string{"P": v}, Lookups: e.found}
		for i := range s.Lookups {
			if s.Lookups[i].StackName == "" {
				s.Lookups[i].StackName = s.Lookups[i].Stack
			}
		}
		params, err := ResolveParameters(s, vals)
		if err != nil {
			return
		}
		if !got.unknown && params["P"] != got.String() {
			t.Fatalf("%q: load-time value %q, deploy-time %q", v, got.String(), params["P"])
		}
		if strings.Contains(params["P"], "TOPSECRET") && !strings.Contains(v, "TOPSECRET") {
			t.Fatalf("%q resolved to the secret in plain text: %q", v, params["P"])
		}
	})
}

// TestLookupKinds: every kind cairn knows parses by its name, and the kinds that read a
// stack by its CloudFormation name are exactly those the plan looks up in the reader's
// account and region.
func TestLookupKinds(t *testing.T) {
	byName := map[LookupKind]bool{KindXref: true, KindRxref: true, KindCFN: true}
	for _, k := range Kinds() {
		if got := k.ByStackName(); got != byName[k] {
			t.Errorf("%s.ByStackName() = %v, want %v", k, got, byName[k])
		}
		parts, err := parseValue("${" + string(k) + " x}")
		if err != nil || len(parts) != 1 || parts[0].kind != k {
			t.Errorf("${%s x} parsed as %+v, %v", k, parts, err)
		}
	}
	if LookupKind("envvar").ByStackName() {
		t.Error("an unknown kind reads a stack")
	}
	if _, err := parseLookup("envvar", "HOME"); err == nil || !strings.Contains(err.Error(), "unknown lookup ${envvar HOME}") || !strings.Contains(err.Error(), "${output}") {
		t.Errorf("unknown kind: %v", err)
	}
}
