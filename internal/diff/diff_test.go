package diff

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

const (
	network = "Parameters:\n  Cidr:\n    Type: String\nResources:\n  Vpc:\n    Type: AWS::EC2::VPC\n    Properties:\n      CidrBlock: !Ref Cidr\nOutputs:\n  VpcId:\n    Value: !Ref Vpc\n"
	app     = "Parameters:\n  VpcId:\n    Type: String\n  Password:\n    Type: String\n    NoEcho: true\nResources:\n  Topic:\n    Type: AWS::SNS::Topic\n"
)

// load writes a bundle and loads its config as deployment shop.
func load(t *testing.T, files map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.LoadOptions{Deployment: "shop"}.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func shop(cidr, password, extra string) map[string]string {
	return map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: network\n    template_path: network.yaml\n    parameters: {Cidr: " + cidr + "}\n" +
			"  - name: app\n    template_path: app.yaml\n    parameters:\n      VpcId: ${output network::VpcId}\n      Password: " + password + "\n" + extra,
		"network.yaml": network, "app.yaml": app,
	}
}

// graphOf is the graph a deploy of c records, network's VpcId output being vpcID.
func graphOf(t *testing.T, c *config.Config, vpcID string) *state.Graph {
	t.Helper()
	g := &state.Graph{Namespace: "shop", Key: "shop", Generation: 3, Bundle: state.BundleRef{VersionID: "v3", GitRef: "0123456789abcdef"}, Stacks: map[string]*state.Stack{}}
	for _, s := range c.Stacks {
		g.Stacks[s.Name] = &state.Stack{Name: s.Name, StackName: s.StackName, TemplateHash: plan.TemplateHash(s)}
	}
	g.Stacks["network"].Outputs = map[string]string{"VpcId": vpcID}
	for _, s := range c.Stacks {
		p, ok := resolve(s, g.Stacks)
		if !ok {
			t.Fatalf("stack %s does not resolve", s.Name)
		}
		g.Stacks[s.Name].ParametersHash = run.HashParameters(p)
	}
	return g
}

// compareCase is one bundle compared with what is applied, and what the output must say.
type compareCase struct {
	name    string
	local   map[string]string
	applied *config.Config
	graph   *state.Graph
	changed bool
	want    []string // lines of the output, in order
	absent  []string
}

func TestCompare(t *testing.T) {
	appliedFiles := shop("10.0.0.0/16", "hunter2", "")
	applied := load(t, appliedFiles)
	g := graphOf(t, applied, "vpc-0123")
	// A stack without secrets, whose parameters' hash the CLI can compute as the deployer.
	readerFiles := map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - name: network\n    template_path: network.yaml\n    parameters: {Cidr: 10.0.0.0/16}\n" +
		"  - name: app\n    template_path: reader.yaml\n    parameters:\n      VpcId: ${output network::VpcId}\n",
		"network.yaml": network, "reader.yaml": "Parameters:\n  VpcId:\n    Type: String\nResources:\n  Topic:\n    Type: AWS::SNS::Topic\n"}
	reader := load(t, readerFiles)
	changedTemplate := shop("10.0.0.0/16", "hunter2", "")
	changedTemplate["network.yaml"] = strings.Replace(network, "Resources:", "Resources:\n  Gateway:\n    Type: AWS::EC2::InternetGateway", 1)
	tests := []compareCase{
		{name: "the same content", local: appliedFiles, applied: applied, graph: g,
			want: []string{"deployment shop: PATH against graph shop/shop at generation 3 (bundle version v3, git 0123456789ab)", "0 changed, 0 new, 0 removed, 2 unchanged"}},
		{name: "a template and parameters changed", local: shop("10.1.0.0/16", "swordfish", ""), applied: applied, graph: g, changed: true,
			want: []string{"stack network (shop-network): changed", "  parameters:", "  ~ Cidr: 10.0.0.0/16 -> 10.1.0.0/16",
				"stack app (shop-app): changed", "  ~ Password: **** -> ****", "2 changed, 0 new, 0 removed, 0 unchanged"},
			absent: []string{"hunter2", "swordfish", "VpcId"}},
		{name: "a template's text", local: changedTemplate, applied: applied, graph: g, changed: true,
			want: []string{"stack network (shop-network): changed", "--- applied/network.yaml", "+++ PATH/network.yaml", "@@ -2,6 +2,8 @@", " Resources:", "+  Gateway:", "+    Type: AWS::EC2::InternetGateway", "   Vpc:", "1 changed, 0 new, 0 removed, 1 unchanged"}},
		{name: "a new stack and a removed one", local: map[string]string{
			"cairn.yaml":   "namespace: shop\nstacks:\n  - name: network\n    template_path: network.yaml\n    parameters: {Cidr: 10.0.0.0/16}\n  - name: web\n    template_path: app.yaml\n    parameters:\n      VpcId: ${output network::VpcId}\n      Password: x\n",
			"network.yaml": network, "app.yaml": app}, applied: applied, graph: g, changed: true,
			want: []string{"stack web (shop-web): new, created by the next run", "  parameters:", "    Password: ****", "    VpcId: ${output network::VpcId} (now vpc-0123)",
				"stack app (shop-app): applied, no longer in the bundle: the next run deletes it", "0 changed, 1 new, 1 removed, 1 unchanged"}},
		{name: "a disabled stack is not removed", local: shop("10.0.0.0/16", "hunter2", "    enabled: false\n"), applied: applied, graph: g,
			want: []string{"0 changed, 0 new, 0 removed, 1 unchanged"}},
		{name: "an output it reads changed", local: readerFiles, applied: reader, graph: graphOf(t, reader, "vpc-0123"), changed: true,
			want: []string{"stack app (shop-app): changed", "  the parameters resolve to other values than applied: an output they read changed since"}},
		{name: "the applied text is unreadable", local: changedTemplate, applied: nil, graph: g, changed: true,
			want: []string{"stack network (shop-network): changed", "  the template changed (sha256 "}},
		{name: "nothing applied", local: appliedFiles, graph: nil, changed: true,
			want: []string{"deployment shop: nothing is applied yet; every stack of PATH is new", "stack network (shop-network): new", "    Cidr: 10.0.0.0/16",
				"    VpcId: ${output network::VpcId} (unresolved: read at deploy time)", "0 changed, 2 new, 0 removed, 0 unchanged"}},
	}
	moved := shop("10.0.0.0/16", "hunter2", "    region: eu-west-1\n")
	tests = append(tests, compareCase{name: "a stack moved to another region", local: moved, applied: applied, graph: g, changed: true,
		want: []string{"stack app: moved from shop-app to shop-app (cairn's account, eu-west-1): the next run is refused: cairn does not move or rename a live stack (the old one would be left behind); give the stack a new name in PATH/cairn.yaml",
			"0 changed, 0 new, 0 removed, 1 unchanged, 1 moved"}})
	// The graph of "an output it reads changed" has app resolved against another VpcId.
	tests[5].graph.Stacks["network"].Outputs["VpcId"] = "vpc-4567"
	// A stack with NoEcho parameters: the graph's hash is of its parameters sealed under
	// the deployer's key, which the CLI does not have, so it compares their text only.
	sealed := graphOf(t, applied, "vpc-0123")
	sealed.Stacks["network"].Outputs["VpcId"] = "vpc-4567"
	tests = append(tests, compareCase{name: "a stack with secrets is compared by its text", local: appliedFiles, applied: applied, graph: sealed,
		want: []string{"0 changed, 0 new, 0 removed, 2 unchanged"}, absent: []string{"resolve to other values"}})
	// A parameter written the same whose variable reads another value (the config's
	// variables, or the --var-file stored in the bundle): before, no difference was shown.
	vars := func(cidr string) map[string]string {
		return map[string]string{"cairn.yaml": "namespace: shop\nvariables: {cidr: " + cidr + "}\nstacks:\n  - name: network\n    template_path: network.yaml\n    parameters: {Cidr: '${var cidr}'}\n",
			"network.yaml": network}
	}
	varApplied := load(t, vars("10.0.0.0/16"))
	tests = append(tests, compareCase{name: "a variable's value changed", local: vars("10.1.0.0/16"), applied: varApplied, graph: graphOf(t, varApplied, "vpc-0123"), changed: true,
		want: []string{"stack network (shop-network): changed", "  ~ Cidr: ${var cidr} (var cidr = 10.0.0.0/16) -> ${var cidr} (var cidr = 10.1.0.0/16)", "1 changed, 0 new, 0 removed, 0 unchanged"}},
		compareCase{name: "a variable's value is the same", local: vars("10.0.0.0/16"), applied: varApplied, graph: graphOf(t, varApplied, "vpc-0123"),
			want: []string{"0 changed, 0 new, 0 removed, 1 unchanged"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare("shop", "PATH", load(t, tt.local), tt.applied, tt.graph, target.Target{Account: "000000000000", Region: "us-east-1"})
			var b bytes.Buffer
			if err := r.Write(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if r.Changed() != tt.changed {
				t.Errorf("Changed() = %v, want %v", r.Changed(), tt.changed)
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks, in order, %q:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tt.absent {
				if strings.Contains(out, a) {
					t.Errorf("output shows %q:\n%s", a, out)
				}
			}
		})
	}
}
