package deployer_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
)

// TestDeploymentNameOutsideTheSafeCharactersIsRefused uploads a bundle, and an approval,
// under a deployment name holding a right-to-left override (U+202E), as an uploader to the
// bucket can: the deployer accepts the names the CLI accepts only, so it refuses both,
// says why in its log, and records or deploys nothing under runs/, plans/, state/ or
// locks/.
func TestDeploymentNameOutsideTheSafeCharactersIsRefused(t *testing.T) {
	w := newReviewWorld(t)
	const evil = "\u202eevil"
	w.push(evil, copyBundle(t, chain))
	if _, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
		Key: aws.String("approvals/shop/\u202e20261130-080000000-1a2b3c4d"), Body: strings.NewReader("ok")}); err != nil {
		t.Fatal(err)
	}
	w.waitLog(`use letters, digits, '.', '_' and '-' only, starting with a letter or digit`)
	w.waitLog(`a plan id holds letters, digits`)
	time.Sleep(100 * time.Millisecond) // virtual minutes: anything the uploads started would show
	if keys := w.written(); len(keys) > 0 {
		t.Errorf("the refused uploads wrote %v", keys)
	}
	if stacks := w.stacks(); len(stacks) != 0 {
		t.Errorf("the refused upload created %d stack(s)", len(stacks))
	}
}

// bundleOf writes a bundle directory of files (path → content) and returns it.
func bundleOf(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTemplateURLIntoCairnsBucketIsRefused pushes bundles whose templates point
// CloudFormation at objects of cairn's own bucket outside the templates and artifacts
// cairn uploads: a stack's template_url naming the persistent graph (path style, on the
// emulator's endpoint), a nested stack's TemplateURL naming a run document (virtual-hosted
// style, in a Fn::Sub of the region) or a graph (Fn::Join of a parameter the config sets),
// a function's Code naming another deployment's bundle (written out, through Fn::If's
// other branch, from a parameter read from SSM at deploy time), a layer's Content, an
// AWS::Include of a graph, a state machine's definition, and a bucket imported from an
// export cairn cannot know. The deployer's role can read every one, and CloudFormation
// would fetch them with it. Each run fails before any CloudFormation call, naming the
// stack, resource, property and object, and nothing of the graph reaches the report.
func TestTemplateURLIntoCairnsBucketIsRefused(t *testing.T) {
	w := newWorld(t, worldOptions{})
	_, first := deployChain(t, w)
	w.putParameter("/other/code-bucket", "String", bucket)
	stateURL := "https://s3.amazonaws.com/" + bucket + "/state/shop/shop.json"
	runURL := "https://" + bucket + ".s3.${AWS::Region}.amazonaws.com/runs/shop/" + first.Run.ID + ".json"
	const fn = "Resources:\n  Fn:\n    Type: AWS::Lambda::Function\n    Properties:\n      Runtime: python3.12\n      Handler: app.handler\n      Role: arn:aws:iam::123456789012:role/fn\n"
	stack := func(params string) string {
		return "namespace: other\nstacks:\n  - name: a\n    template_path: templates/parent.yaml\n" + params
	}
	refused := "an object of cairn's own bucket: a template may name cairn's bucket only at the templates and artifacts cairn uploads itself (templates/SHA256.json, assets/SHA256.EXT)"
	tests := []struct{ name, cfg, template, want string }{
		{"template_url", "namespace: other\nstacks:\n  - name: a\n    template_url: " + stateURL + "\n", "",
			`cairn.yaml:4:19: stacks[0].template_url: "` + stateURL + `" names s3://cairn-state/state/shop/shop.json, ` + refused},
		{"nested TemplateURL, Fn::Sub of the region", stack(""),
			"Resources:\n  Child:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: !Sub " + runURL + "\n",
			`Resources.Child.Properties.TemplateURL (templates/parent.yaml): stack a: TemplateURL of Child (AWS::CloudFormation::Stack) names s3://cairn-state/runs/shop/` + first.Run.ID + `.json, ` + refused},
		{"nested TemplateURL, Fn::Join of a parameter", stack("    parameters: {Bucket: " + bucket + "}\n"),
			"Parameters:\n  Bucket: {Type: String}\nResources:\n  Child:\n    Type: AWS::CloudFormation::Stack\n    Properties:\n      TemplateURL: !Join ['', ['https://', !Ref Bucket, '.s3.', !Ref AWS::URLSuffix, '/state/shop/shop.json']]\n",
			`stack a: TemplateURL of Child (AWS::CloudFormation::Stack) names s3://cairn-state/state/shop/shop.json, ` + refused},
		{"Code, another deployment's bundle", stack(""), fn + "      Code: {S3Bucket: " + bucket + ", S3Key: deployments/shop.zip}\n",
			`templates/parent.yaml:8:13: Resources.Fn.Properties.Code: stack a: Code of Fn (AWS::Lambda::Function) names s3://cairn-state/deployments/shop.zip, ` + refused},
		{"Code, Fn::If's other branch", stack(""), "Conditions:\n  Never: !Equals [a, b]\n" + fn +
			"      Code:\n        S3Bucket: !If [Never, " + bucket + ", my-artifacts]\n        S3Key: !If [Never, state/shop/shop.json, fn.zip]\n",
			`Resources.Fn.Properties.Code: stack a: Code of Fn (AWS::Lambda::Function) names s3://cairn-state/state/shop/shop.json, ` + refused},
		{"Code, bucket read from SSM at deploy time", stack("    parameters:\n      CodeBucket: ${ssm /other/code-bucket}\n"),
			"Parameters:\n  CodeBucket: {Type: String}\n" + fn + "      Code: {S3Bucket: !Ref CodeBucket, S3Key: !Sub 'deployments/shop.zip'}\n",
			`Resources.Fn.Properties.Code (templates/parent.yaml): stack a: Code of Fn (AWS::Lambda::Function) names s3://cairn-state/deployments/shop.zip, ` + refused},
		{"Code, bucket imported", stack(""), fn + "      Code: {S3Bucket: !ImportValue shared-code-bucket, S3Key: fn.zip}\n",
			`Resources.Fn.Properties.Code: stack a: Code of Fn (AWS::Lambda::Function): its bucket or key is computed from Fn::ImportValue shared-code-bucket, which cairn cannot know before CloudFormation does`},
		{"layer Content", stack(""), "Resources:\n  Layer:\n    Type: AWS::Lambda::LayerVersion\n    Properties:\n      Content: {S3Bucket: " + bucket + ", S3Key: approvals/shop.zip}\n",
			`Content of Layer (AWS::Lambda::LayerVersion) names s3://cairn-state/approvals/shop.zip, ` + refused},
		{"AWS::Include of a graph", stack(""), "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n  Fn::Transform:\n    Name: AWS::Include\n    Parameters:\n      Location: s3://" + bucket + "/state/shop/shop.json\n",
			`AWS::Include's Location names s3://cairn-state/state/shop/shop.json, ` + refused},
		{"state machine definition", stack(""), "Resources:\n  Flow:\n    Type: AWS::StepFunctions::StateMachine\n    Properties:\n      RoleArn: arn:aws:iam::123456789012:role/sfn\n      DefinitionS3Location: {Bucket: " + bucket + ", Key: !Sub 'locks/shop/shop.lock'}\n",
			`DefinitionS3Location of Flow (AWS::StepFunctions::StateMachine) names s3://cairn-state/locks/shop/shop.lock, ` + refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"cairn.yaml": tt.cfg}
			if tt.template != "" {
				files["templates/parent.yaml"] = tt.template
			}
			before := w.cfnCalls()
			doc := w.wait("other", w.push("other", bundleOf(t, files)))
			errs := strings.Join(append(slices.Clone(doc.Errors), doc.Run.Reason), "\n")
			for _, s := range doc.Run.Stacks {
				errs += "\n" + s.Reason
			}
			if doc.Run.Status != run.RunFailed || !strings.Contains(errs, tt.want) {
				t.Fatalf("run: %s (%s), errors:\n%s\nwant one containing %q", doc.Run.Status, doc.Run.Reason, errs, tt.want)
			}
			if after := w.cfnCalls(); after["CreateChangeSet"] != before["CreateChangeSet"] || after["CreateStack"] != before["CreateStack"] {
				t.Errorf("the refused bundle called CloudFormation: %v", after)
			}
			if report := w.object(layout.RunReportKey("other", doc.Run.ID)); strings.Contains(report, first.Run.Stacks["network"].StackID) {
				t.Errorf("the report holds what the graph holds:\n%s", report)
			}
		})
	}
}

// TestSSMLookupOutsideItsNamespacePathsIsRefused: with the per-namespace Parameter Store
// paths of CAIRN_SSM_PATHS, a bundle of namespace shop reading web's SecureString through
// ${ssm} is refused before any AWS call (the deployer's one role may read both
// namespaces' paths, so IAM alone could not stop it), naming the lookup and the paths
// shop may read; shop's own parameters deploy.
func TestSSMLookupOutsideItsNamespacePathsIsRefused(t *testing.T) {
	calls := &callCounter{}
	w := newWorld(t, worldOptions{SSMPaths: `{"shop": ["/shop/*"], "web": ["/web/*"]}`, Calls: calls})
	w.putLookupParameters()
	w.putParameter("/web/prod/db/password", "SecureString", secret2)
	dir := copyBundle(t, lookupsBundle)
	edit(t, dir, "cairn.yaml", "Password: ${ssm /shop/${var env}/db/password}", "Password: ${ssm /web/${var env}/db/password}")
	calls.take()
	doc := w.wait("shop", w.push("shop", dir))
	want := "SSM parameter /web/prod/db/password is outside the Parameter Store paths namespace shop may read (/shop/*)"
	if doc.Run.Status != run.RunFailed || !strings.Contains(strings.Join(doc.Errors, "\n"), want) {
		t.Fatalf("run: %s (%s), errors %q, want %q", doc.Run.Status, doc.Run.Reason, doc.Errors, want)
	}
	if n := calls.take(); n["SSM.GetParameters"] != 0 || n["CloudFormation.CreateChangeSet"] != 0 {
		t.Errorf("the refused bundle called SSM or CloudFormation: %v", n)
	}
	edit(t, dir, "cairn.yaml", "Password: ${ssm /web/${var env}/db/password}", "Password: ${ssm /shop/${var env}/db/password}")
	if doc := w.wait("shop", w.push("shop", dir)); doc.Run.Status != run.Succeeded {
		t.Fatalf("shop's own parameters: %s (%s) %v", doc.Run.Status, doc.Run.Reason, doc.Errors)
	}
}

// planAndApprove plans dir for deployment shop, approves the plan and returns the plan
// and its apply run, which must succeed.
func (w *world) planAndApprove(dir string) (*plan.Document, *rundoc.Document) {
	w.t.Helper()
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if p.Status != plan.Planned {
		w.t.Fatalf("plan: %s (%s) %v %v", p.Status, p.Reason, p.Refusals, p.Errors)
	}
	apply := w.approve("shop", p.ID)
	if apply.Run.Status != run.Succeeded {
		w.t.Fatalf("apply: %s (%s) %v %v", apply.Run.Status, apply.Run.Reason, apply.Refusals, phases(apply))
	}
	return p, apply
}

// TestProtectedStackParameterChangeNeedsPlan deploys the chain with database protected
// (and reading its Size from SSM), through a plan. Then a push changing only a literal
// parameter of database, and an unchanged re-push after the SSM parameter it reads
// changed, are each refused before any change, naming database; a plan of the same
// change lists database's update, and its approval applies it.
func TestProtectedStackParameterChangeNeedsPlan(t *testing.T) {
	w := newReviewWorld(t)
	w.putParameter("/shop/db/size", "String", "small")
	dir := copyBundle(t, chain)
	edit(t, dir, "cairn.yaml", "      Size: small\n    termination_protection: true", "      Size: ${ssm /shop/db/size}\n      Tier: gold\n    termination_protection: true\n    protected: true")
	edit(t, dir, "templates/parameter.yaml", "  Size:\n    Type: String\n", "  Size:\n    Type: String\n  Tier:\n    Type: String\n    Default: none\n")
	w.planAndApprove(dir)

	refused := func(what string) {
		t.Helper()
		executed := len(w.executedIDs())
		doc := w.wait("shop", w.push("shop", dir))
		refusals := strings.Join(doc.Refusals, "\n")
		if doc.Run.Status != run.RunFailed || !strings.Contains(refusals, "protected stack(s) database change only through an approved plan") {
			t.Fatalf("%s: push %s (%s), refusals %q", what, doc.Run.Status, doc.Run.Reason, refusals)
		}
		if n := len(w.executedIDs()); n != executed {
			t.Fatalf("%s: the refused push executed %d change set(s)", what, n-executed)
		}
	}
	edit(t, dir, "cairn.yaml", "Tier: gold", "Tier: platinum")
	refused("a parameter value")
	edit(t, dir, "cairn.yaml", "Tier: platinum", "Tier: gold")
	if doc := w.wait("shop", w.push("shop", dir)); doc.Run.Status != run.Succeeded {
		t.Fatalf("the applied bundle pushed again: %s (%s) %v", doc.Run.Status, doc.Run.Reason, doc.Refusals)
	}
	w.putParameter("/shop/db/size", "String", "large")
	refused("an SSM value it reads")

	p, _ := w.planAndApprove(dir)
	if s := p.Stack("database"); s.Action != plan.Update || s.ChangeSetID == "" {
		t.Errorf("plan: database %+v, want an update with a change set", s)
	}
	if d := w.stacks()["shop-database"]; d.StackStatus != "UPDATE_COMPLETE" {
		t.Errorf("shop-database after the apply: %s", d.StackStatus)
	}
}

// TestProtectedStackDeletionNeedsPlan deploys the chain with web protected, through a
// plan, then drops web from cairn.yaml: the push is refused and web stays; so is a push
// keeping web but dropping its protection. A plan lists web's deletion, and its approval
// deletes it.
func TestProtectedStackDeletionNeedsPlan(t *testing.T) {
	w := newReviewWorld(t)
	dir := copyBundle(t, chain)
	edit(t, dir, "cairn.yaml", "      Value: ${output app::Name}\n      Size: small", "      Value: ${output app::Name}\n      Size: small\n    protected: true")
	w.planAndApprove(dir)
	if g := w.graph("shop", "shop"); !g.Stacks["web"].PlanOnly || g.Stacks["app"].PlanOnly {
		t.Fatalf("graph: web plan only %v, app %v", g.Stacks["web"].PlanOnly, g.Stacks["app"].PlanOnly)
	}

	unprotected := copyBundle(t, dir)
	edit(t, unprotected, "cairn.yaml", "      Size: small\n    protected: true", "      Size: small")
	dropped := copyBundle(t, unprotected)
	edit(t, dropped, "cairn.yaml", "  - name: web\n    template_path: templates/parameter.yaml\n    parameters:\n      Value: ${output app::Name}\n      Size: small\n", "")
	for _, tc := range []struct{ dir, want string }{
		{dropped, "protected stack(s) web (removed from the config: deleted) change only through an approved plan"},
		{unprotected, "protected stack(s) web (its protection is removed) change only through an approved plan"},
	} {
		doc := w.wait("shop", w.push("shop", tc.dir))
		if refusals := strings.Join(doc.Refusals, "\n"); doc.Run.Status != run.RunFailed || !strings.Contains(refusals, tc.want) {
			t.Fatalf("push: %s, refusals %q, want %q", doc.Run.Status, refusals, tc.want)
		}
		if _, ok := w.stacks()["shop-web"]; !ok {
			t.Fatal("a refused push deleted shop-web")
		}
	}

	p, apply := w.planAndApprove(dropped)
	if !slices.Contains(p.Deletions, "web") || p.Stack("web").Action != plan.Delete {
		t.Errorf("plan: deletions %v, web %+v", p.Deletions, p.Stack("web"))
	}
	if s := apply.Run.Stacks["web"]; s.Phase != run.Done {
		t.Errorf("apply: web %s (%s)", s.Phase, s.Reason)
	}
	if _, ok := w.stacks()["shop-web"]; ok {
		t.Error("the approved plan did not delete shop-web")
	}
}

// editPlan rewrites plans/NAME/PLAN_ID.json as someone who may write plans/ can.
func (w *world) editPlan(name, id string, edit func(p *plan.Document)) {
	w.t.Helper()
	p, err := plan.Decode([]byte(w.object(layout.PlanKey(name, id))))
	if err != nil {
		w.t.Fatal(err)
	}
	edit(p)
	body, err := json.Marshal(p)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.PlanKey(name, id)), Body: bytes.NewReader(body)}); err != nil {
		w.t.Fatal(err)
	}
}

// TestPlanDocumentPointingElsewhereExecutesNothing plans a change of two stacks of
// deployment shop, and a change of deployment other (left unapproved). Each test edits the
// shop plan's document in the bucket, as a writer of plans/ can, so that a stack's entry
// names another change set (the other deployment's, or another stack's of the same plan,
// with every field of the entry made to agree), or adds the deletion of the other
// deployment's stack; then approves it. The approval refuses, saying which check failed
// (the document's seal, by the deployer's key, and each check of what it names), and
// executes and deletes nothing.
func TestPlanDocumentPointingElsewhereExecutesNothing(t *testing.T) {
	w := newReviewWorld(t)
	dir, _ := deployChain(t, w)
	otherDir := bundleOf(t, map[string]string{"cairn.yaml": "namespace: other\nstacks:\n  - name: web\n    template_path: templates/parameter.yaml\n    parameters: {Value: v, Size: small}\n",
		"templates/parameter.yaml": mustReadString(t, chain+"/templates/parameter.yaml")})
	if d := w.wait("other", w.push("other", otherDir)); d.Run.Status != run.Succeeded {
		t.Fatalf("other: %s (%s)", d.Run.Status, d.Run.Reason)
	}
	edit(t, otherDir, "cairn.yaml", "Size: small", "Size: large")
	foreign := w.planOf("other", w.uploadPlan("other", otherDir)).Stack("web")
	if foreign.ChangeSetID == "" {
		t.Fatal("the other deployment's plan made no change set")
	}
	size := "small"
	tests := []struct {
		name   string
		tamper func(p *plan.Document)
		want   string
	}{
		{"another deployment's change set, by id", func(p *plan.Document) {
			setChangeSet(p, "web", foreign.ChangeSetID, "", "", "")
		}, "is named cairn-"},
		{"another deployment's change set, every field", func(p *plan.Document) {
			setChangeSet(p, "web", foreign.ChangeSetID, foreign.ChangeSetName, foreign.StackName, foreign.StackID)
		}, "is not one of this plan's (they are named cairn-"},
		{"another stack's change set of the same plan", func(p *plan.Document) {
			db := p.Stack("database")
			setChangeSet(p, "web", db.ChangeSetID, db.ChangeSetName, db.StackName, db.StackID)
		}, `was made with tag cairn:name="database", where this plan says "web"`},
		{"the deletion of another deployment's stack", func(p *plan.Document) {
			p.Run.Stacks["victim"] = &run.Stack{Name: "victim", StackName: foreign.StackName, StackID: foreign.StackID, Intent: run.IntentDelete, Phase: run.Ready, Exists: true}
			p.Stacks = append(p.Stacks, plan.Stack{Name: "victim", StackName: foreign.StackName, Action: plan.Delete})
			p.Deletions = append(p.Deletions, "victim")
		}, "stack victim (other-web): the plan deletes it, but the persistent graph holds no such stack"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := fmt.Sprintf("s%d", i)
			edit(t, dir, "cairn.yaml", "Value: ${output app::Name}\n      Size: "+size, "Value: ${output app::Name}\n      Size: "+next)
			edit(t, dir, "cairn.yaml", "Value: ${output network::VpcId}\n      Size: "+size+"\n    termination_protection: true", "Value: ${output network::VpcId}\n      Size: "+next+"\n    termination_protection: true")
			size = next
			p := w.planOf("shop", w.uploadPlan("shop", dir))
			if p.Status != plan.Planned || p.Stack("web").ChangeSetID == "" || p.Stack("database").ChangeSetID == "" {
				t.Fatalf("plan: %s (%s); web %+v, database %+v", p.Status, p.Reason, p.Stack("web"), p.Stack("database"))
			}
			w.editPlan("shop", p.ID, tt.tamper)
			executed := len(w.executedIDs())
			apply := w.approve("shop", p.ID)
			reasons := strings.Join(apply.Refusals, "\n")
			t.Logf("refused:\n%s", reasons)
			if apply.Run.Status != run.RunFailed || !strings.Contains(reasons, tt.want) || !strings.Contains(reasons, "the plan document does not describe what its plan run made; nothing was executed: re-plan") ||
				!strings.Contains(reasons, "plan "+p.ID+" of deployment shop: its seal is not the deployer's of the document as it is now: the document was edited since the plan run wrote it") {
				t.Errorf("apply: %s (%s), refusals:\n%s\nwant one containing %q", apply.Run.Status, apply.Run.Reason, reasons, tt.want)
			}
			if n := len(w.executedIDs()); n != executed {
				t.Errorf("the tampered plan executed %d change set(s)", n-executed)
			}
			if _, ok := w.stacks()[foreign.StackName]; !ok {
				t.Errorf("the tampered plan deleted %s", foreign.StackName)
			}
		})
	}
}

// setChangeSet makes stack name's entries of p (the plan's list and its run) name change
// set id; name, stackName and stackID too where not "".
func setChangeSet(p *plan.Document, stack, id, name, stackName, stackID string) {
	rs, ps := p.Run.Stacks[stack], p.Stack(stack)
	rs.ChangeSetID, ps.ChangeSetID = id, id
	if name != "" {
		rs.ChangeSetName, ps.ChangeSetName = name, name
	}
	if stackName != "" {
		rs.StackName, ps.StackName = stackName, stackName
	}
	if stackID != "" {
		rs.StackID, ps.StackID = stackID, stackID
	}
}

func mustReadString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// liveTags returns the tags of a live stack.
func (w *world) liveTags(stackName string) map[string]string {
	w.t.Helper()
	tags := map[string]string{}
	for _, tg := range w.stacks()[stackName].Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return tags
}

// TestSealsConfirmNoGuess deploys a stack whose NoEcho parameter reads a SecureString, as
// the lookups bundle does. A reader of the bucket and of the stack's tags who guesses the
// secret right computes what cairn's seals were before they were keyed (sha256 of the
// name and the value) and the parameters hash they would give: neither is found in any
// version of any object, nor in the stack's tags, so nothing confirms the guess; every
// seal the run stored is keyed.
func TestSealsConfirmNoGuess(t *testing.T) {
	w := newReviewWorld(t)
	w.putLookupParameters()
	doc := w.wait("shop", w.push("shop", copyBundle(t, lookupsBundle)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s)", doc.Run.Status, doc.Run.Reason)
	}
	const name = "/shop/prod/db/password"
	guess := seal.Unkeyed.Sum("cairn ssm-secure", name, secret1) // the right guess, sealed as before
	db := doc.Run.Stacks["db"]
	stored := db.Parameters["Password"]
	if !strings.HasPrefix(stored, "{{cairn:ssm-secure:"+name+"@"+seal.Marker) || strings.Contains(stored, guess) {
		t.Fatalf("stored %q: want a keyed seal", stored)
	}
	guessed := maps.Clone(db.Parameters)
	guessed["Password"] = "{{cairn:ssm-secure:" + name + "@" + guess + "}}"
	guessedHash := run.HashParameters(guessed)
	if w.graph("shop", "shop").Stacks["db"].ParametersHash == guessedHash || w.liveTags("shop-db")[state.TagParametersHash] == guessedHash {
		t.Error("the parameters hash of the graph or the stack's tag confirms the guessed secret")
	}
	if n := w.scanBucket(secret1, guess, guessedHash); n < 5 {
		t.Errorf("scanned only %d object versions", n)
	}
	if report := w.object(layout.RunReportKey("shop", doc.Run.ID)); strings.Contains(report, "sealed without a key") {
		t.Errorf("a keyed deployer warns of unkeyed seals:\n%s", report)
	}
}

// TestGraphSealedBeforeKeysKeepsStacksUnchanged deploys with a deployer that seals
// without a key, as cairn did before keyed seals, then upgrades it to one with the seal
// key: a plan made before is refused (re-plan); pushing the same bundle twice, nothing
// looks changed (no change set is made, the
// graph keeps its hashes, which the stacks' tags hold too). A changed SecureString then
// updates exactly its stack, stored with a keyed seal.
func TestGraphSealedBeforeKeysKeepsStacksUnchanged(t *testing.T) {
	w := newReviewWorldWith(t, worldOptions{Unkeyed: true})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	old := w.wait("shop", w.push("shop", dir))
	if old.Run.Status != run.Succeeded || !strings.Contains(strings.Join(old.Warnings, "\n"), "secrets are sealed without a key (CAIRN_SEAL_KEY_ID is not set)") {
		t.Fatalf("unkeyed run: %s (%s), warnings %q", old.Run.Status, old.Run.Reason, old.Warnings)
	}
	before := w.graph("shop", "shop").Stacks["db"].ParametersHash
	oldPlan := w.planOf("shop", w.uploadPlan("shop", dir))

	w.upgrade()
	if apply := w.approve("shop", oldPlan.ID); apply.Run.Status != run.RunFailed ||
		!strings.Contains(strings.Join(apply.Refusals, "\n"), "plan "+oldPlan.ID+" holds secrets sealed without a key (it was made by a cairn before keyed seals): re-plan") {
		t.Errorf("a plan made before the upgrade: %s, refusals %q", apply.Run.Status, apply.Refusals)
	}
	for i := range 2 {
		calls := w.cfnCalls()
		doc := w.wait("shop", w.push("shop", dir))
		if doc.Run.Status != run.Succeeded || len(doc.Warnings) != 0 {
			t.Fatalf("push %d after the upgrade: %s (%s), warnings %q", i+1, doc.Run.Status, doc.Run.Reason, doc.Warnings)
		}
		for n, s := range doc.Run.Stacks {
			if s.Phase != run.Unchanged {
				t.Errorf("push %d after the upgrade: stack %s %s (%s), want unchanged", i+1, n, s.Phase, s.Reason)
			}
		}
		if n := w.cfnCalls()["CreateChangeSet"] - calls["CreateChangeSet"]; n != 0 {
			t.Errorf("push %d after the upgrade made %d change set(s)", i+1, n)
		}
		if h := w.graph("shop", "shop").Stacks["db"].ParametersHash; h != before || w.liveTags("shop-db")[state.TagParametersHash] != before {
			t.Errorf("push %d: the graph's hash of db is %s, its tag %s; was %s", i+1, h, w.liveTags("shop-db")[state.TagParametersHash], before)
		}
	}

	w.putParameter("/shop/prod/db/password", "SecureString", secret2)
	doc := w.wait("shop", w.push("shop", dir))
	if s := doc.Run.Stacks["db"]; doc.Run.Status != run.Succeeded || s.Phase != run.Done || !strings.Contains(s.Parameters["Password"], "@"+seal.Marker) {
		t.Fatalf("a changed SecureString: %s, db %s, stored %q", doc.Run.Status, s.Phase, s.Parameters["Password"])
	}
	if got := w.parameterValue(doc, "db"); got != "admin:"+secret2 {
		t.Errorf("db holds %q", got)
	}
}

// TestHostilePropertyNameCannotHideThePlan pushes a stack whose custom resource has a
// property named with a newline, an HTML comment, a tag, backticks and a pipe (a template
// may name a custom resource's properties anything), then plans a change of its value. The
// plan's Markdown (the pull-request comment) and the run report show the name escaped:
// no HTML comment opens after the marker line, and what follows the name (its table, the
// approve line) is still there; their pages (HTML) show it as text.
func TestHostilePropertyNameCannotHideThePlan(t *testing.T) {
	w := newReviewWorld(t)
	const name = "Bad\\n<!-- hide`|</details>"
	tmpl := func(v string) string {
		return "Resources:\n  Thing:\n    Type: Custom::Thing\n    Properties:\n      ServiceToken: arn:aws:lambda:us-east-1:000000000000:function:stand-in\n      \"" + name + "\": " + v + "\n"
	}
	dir := bundleOf(t, map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n", "templates/app.yaml": tmpl("one")})
	if d := w.wait("shop", w.push("shop", dir)); d.Run.Status != run.Succeeded {
		t.Fatalf("push: %s (%s) %v %v", d.Run.Status, d.Run.Reason, d.Errors, phases(d))
	}
	if err := os.WriteFile(filepath.Join(dir, "templates/app.yaml"), []byte(tmpl("two")), 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if p.Status != plan.Planned || len(p.Stack("app").Changes) == 0 || !strings.Contains(strings.Join(p.Stack("app").Changes[0].Details, " "), "<!-- hide") {
		t.Fatalf("plan: %s (%s) %v; app %+v", p.Status, p.Reason, p.Errors, p.Stack("app"))
	}
	for _, key := range []string{layout.PlanMarkdownKey("shop", p.ID), layout.RunReportKey("shop", p.ID)} {
		md := w.object(key)
		if n := strings.Count(md, "<!--") - strings.Count(md, "<!-- cairn:plan deployment=shop -->"); n != 0 {
			t.Errorf("%s opens %d HTML comment(s) the name brought:\n%s", key, n, md)
		}
		for _, tag := range []string{"</details><", "hide`|"} {
			if strings.Contains(md, tag) {
				t.Errorf("%s holds %q raw:\n%s", key, tag, md)
			}
		}
	}
	// The pages beside them show it as text: escaped, in the change's details.
	for _, key := range []string{layout.PlanPageKey("shop", p.ID), layout.RunPageKey("shop", p.ID)} {
		page := w.object(key)
		if !strings.HasPrefix(page, "<!DOCTYPE html>") || strings.Contains(page, "<!-- hide") || strings.Contains(page, "</details><") {
			t.Errorf("%s is no page, or holds the name raw:\n%s", key, page)
		}
	}
	if page := w.object(layout.PlanPageKey("shop", p.ID)); !strings.Contains(page, "Bad &lt;!-- hide`|&lt;/details&gt;") || !strings.Contains(page, "<td>Thing</td><td>Custom::Thing</td>") {
		t.Errorf("the plan's page does not show the escaped name in Thing's change:\n%s", page)
	}
	md := w.object(layout.PlanMarkdownKey("shop", p.ID))
	if !strings.Contains(md, "Bad &lt;!-- hide\\`\\|&lt;/details&gt;") || !strings.Contains(md, "cairn approve shop "+p.ID) || !strings.Contains(md, "| Thing | Custom::Thing | Modify |") {
		t.Errorf("the plan does not show the escaped name, its change and the approve line:\n%s", md)
	}
}

// secretOutputBundle is a stack db whose template outputs its NoEcho parameter (given a
// SecureString), and a stack app reading that output into a NoEcho parameter of its own,
// which it keeps in an SSM parameter (so the test sees what CloudFormation got).
func secretOutputBundle(t *testing.T) string {
	return bundleOf(t, map[string]string{
		"cairn.yaml": `namespace: shop
stacks:
  - name: db
    template_path: templates/db.yaml
    parameters: {Password: "${ssm /shop/db/password}"}
  - name: app
    template_path: templates/app.yaml
    parameters: {Secret: "${output db::Password}", Name: "${output db::Name}"}
`,
		"templates/db.yaml": `Parameters:
  Password: {Type: String, NoEcho: true}
Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Password: {Value: !Ref Password}
  Name: {Value: !GetAtt Topic.TopicName}
`,
		"templates/app.yaml": `Parameters:
  Secret: {Type: String, NoEcho: true}
  Name: {Type: String}
Resources:
  Kept:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Value: !Sub "${Name}:${Secret}"}
Outputs:
  Kept: {Value: !Ref Kept}
  Echo: {Value: !Ref Secret}
`,
	})
}

// TestSecretOutputIsSealed deploys a template that outputs its NoEcho parameter (a
// SecureString) and a stack consuming that output. No version of any object of the bucket
// holds the secret: the graph, the runs and the plans keep the outputs computed from it
// (and the consumer's own output echoing it) sealed, and the consumer's parameter as a
// sealed reference; CloudFormation still gets the value. An unchanged push makes no change
// set; a changed secret updates both stacks; a plan of the consumer is fresh at approval.
func TestSecretOutputIsSealed(t *testing.T) {
	w := newReviewWorld(t)
	w.putParameter("/shop/db/password", "SecureString", secret1)
	dir := secretOutputBundle(t)
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("push: %s (%s) %v %v", doc.Run.Status, doc.Run.Reason, doc.Errors, phases(doc))
	}
	db, app := doc.Run.Stacks["db"], doc.Run.Stacks["app"]
	if !strings.HasPrefix(db.Outputs["Password"], "{{cairn:output:db.Password@"+seal.Marker) || strings.HasPrefix(db.Outputs["Name"], "{{") {
		t.Errorf("db's outputs as stored: %v", db.Outputs)
	}
	if !strings.HasPrefix(app.Outputs["Echo"], "{{cairn:output:app.Echo@"+seal.Marker) || app.Parameters["Secret"] != db.Outputs["Password"] {
		t.Errorf("app: outputs %v, parameters %v", app.Outputs, app.Parameters)
	}
	if got := w.parameterValueOf(doc, "app", "Kept"); !strings.HasSuffix(got, ":"+secret1) {
		t.Errorf("app's parameter holds %q: CloudFormation did not get the secret", got)
	}
	if g := w.graph("shop", "shop"); g.Stacks["db"].Outputs["Password"] != db.Outputs["Password"] {
		t.Errorf("graph: db outputs %v", g.Stacks["db"].Outputs)
	}

	calls := w.cfnCalls()
	if again := w.wait("shop", w.push("shop", dir)); again.Run.Status != run.Succeeded || w.cfnCalls()["CreateChangeSet"] != calls["CreateChangeSet"] {
		t.Errorf("unchanged push: %s, %d change set(s)", again.Run.Status, w.cfnCalls()["CreateChangeSet"]-calls["CreateChangeSet"])
	}

	w.putParameter("/shop/db/password", "SecureString", secret2)
	changed := w.wait("shop", w.push("shop", dir))
	if changed.Run.Stacks["db"].Phase != run.Done || changed.Run.Stacks["app"].Phase != run.Done {
		t.Errorf("a changed secret: %v", phases(changed))
	}
	if got := w.parameterValueOf(changed, "app", "Kept"); !strings.HasSuffix(got, ":"+secret2) {
		t.Errorf("after the change app's parameter holds %q", got)
	}
	// A plan of app, which consumes the secret output: its approval compares the output
	// as sealed, so the plan is fresh, and the apply gets the value again.
	edit(t, dir, "templates/app.yaml", "Properties: {Type: String,", "Properties: {Type: String, Description: reviewed,")
	p, apply := w.planAndApprove(dir)
	if p.Stack("app").Action != plan.Update || apply.Run.Stacks["app"].Phase != run.Done {
		t.Errorf("plan: app %s; apply: app %s (%s)", p.Stack("app").Action, apply.Run.Stacks["app"].Phase, apply.Run.Stacks["app"].Reason)
	}
	if got := w.parameterValueOf(apply, "app", "Kept"); !strings.HasSuffix(got, ":"+secret2) {
		t.Errorf("after the apply app's parameter holds %q", got)
	}
	if n := w.scanBucket(secret1, secret2); n < 10 {
		t.Errorf("scanned only %d object versions", n)
	}
}

// parameterValueOf is the value of the SSM parameter stack made (its output named output).
func (w *world) parameterValueOf(doc *rundoc.Document, stack, output string) string {
	w.t.Helper()
	name := doc.Run.Stacks[stack].Outputs[output]
	out, err := w.ssmClient().GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		w.t.Fatalf("stack %s: parameter %q: %v", stack, name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

// TestDynamicReferenceOutsideItsNamespacePathsIsRefused: with the per-namespace Parameter
// Store paths of CAIRN_SSM_PATHS, a bundle of namespace shop whose template reads web's
// parameters through a dynamic reference ({{resolve:ssm:...}}, with a version, as an ARN,
// {{resolve:ssm-secure:...}}, computed by Fn::Join from a parameter the config sets or
// from one read from SSM at deploy time, or by Fn::Join from an import) or passes one as a
// parameter's value is refused before any change set, as a ${ssm} lookup is: CloudFormation
// would resolve it with the deployer's role, which reads both namespaces' paths. A
// reference to shop's own parameter deploys.
func TestDynamicReferenceOutsideItsNamespacePathsIsRefused(t *testing.T) {
	w := newWorld(t, worldOptions{SSMPaths: `{"shop": ["/shop/*"], "web": ["/web/*"]}`})
	w.putParameter("/web/db/user", "String", "web-admin")
	w.putParameter("/web/db/password", "SecureString", secret2)
	w.putParameter("/shop/db/user", "String", "shop-admin")
	w.putParameter("/shop/env-name", "String", "web")
	param := func(value string) string {
		return "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: " + value + "\n"
	}
	cfg := "namespace: shop\nstacks:\n  - name: a\n    template_path: templates/a.yaml\n"
	outside := func(name, ref string) string {
		return "SSM parameter " + name + " (dynamic reference " + ref + ") is outside the Parameter Store paths namespace shop may read (/shop/*): move the parameter under one of them, or have cairn deployed with the path in the CDK context cairn:ssmPaths for namespace shop"
	}
	tests := []struct{ name, cfg, template, want string }{
		{"ssm", cfg, param("'{{resolve:ssm:/web/db/user}}'"),
			"templates/a.yaml:6:14: Resources.P.Properties.Value: stack a: " + outside("/web/db/user", "{{resolve:ssm:/web/db/user}}")},
		{"ssm with a version", cfg, param("'{{resolve:ssm:/web/db/user:1}}'"), outside("/web/db/user", "{{resolve:ssm:/web/db/user:1}}")},
		{"ssm by ARN", cfg, param("'{{resolve:ssm:arn:aws:ssm:us-east-1:000000000000:parameter/web/db/user}}'"),
			outside("/web/db/user", "{{resolve:ssm:arn:aws:ssm:us-east-1:000000000000:parameter/web/db/user}}")},
		{"ssm-secure", cfg, "Resources:\n  U:\n    Type: AWS::IAM::User\n    Properties:\n      LoginProfile:\n        Password: '{{resolve:ssm-secure:/web/db/password}}'\n",
			outside("/web/db/password", "{{resolve:ssm-secure:/web/db/password}}")},
		{"Fn::Join of a parameter the config sets", cfg + "    parameters: {Env: web}\n", "Parameters:\n  Env: {Type: String}\n" + param("!Join ['', ['{{resolve:ssm:/', !Ref Env, '/db/user}}']]"),
			outside("/web/db/user", "{{resolve:ssm:/web/db/user}}")},
		{"Fn::Join of a parameter read at deploy time", cfg + "    parameters:\n      Env: ${ssm /shop/env-name}\n", "Parameters:\n  Env: {Type: String}\n" + param("!Join ['', ['{{resolve:ssm:/', !Ref Env, '/db/user}}']]"),
			outside("/web/db/user", "{{resolve:ssm:/web/db/user}}")},
		{"Fn::Join of an import", cfg, param("!Join ['', ['{{resolve:ssm:/', !ImportValue env-name, '/db/user}}']]"),
			"dynamic reference {{resolve:ssm:/${Fn::ImportValue env-name}/db/user}} reads an SSM parameter whose name is computed from Fn::ImportValue env-name, which cairn cannot know before CloudFormation does"},
		{"a parameter's value", cfg + "    parameters: {Value: '{{resolve:ssm:/web/db/user}}'}\n", "Parameters:\n  Value: {Type: String}\n" + param("!Ref Value"),
			"stack a: parameter Value: " + outside("/web/db/user", "{{resolve:ssm:/web/db/user}}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.cfnCalls()
			doc := w.wait("shop", w.push("shop", bundleOf(t, map[string]string{"cairn.yaml": tt.cfg, "templates/a.yaml": tt.template})))
			errs := strings.Join(append(slices.Clone(doc.Errors), doc.Run.Reason), "\n")
			for _, s := range doc.Run.Stacks {
				errs += "\n" + s.Reason
			}
			if doc.Run.Status != run.RunFailed || !strings.Contains(errs, tt.want) {
				t.Fatalf("run: %s (%s), errors:\n%s\nwant one containing %q", doc.Run.Status, doc.Run.Reason, errs, tt.want)
			}
			if after := w.cfnCalls(); after["CreateChangeSet"] != before["CreateChangeSet"] || after["CreateStack"] != before["CreateStack"] {
				t.Errorf("the refused bundle called CloudFormation: %v", after)
			}
			if strings.Contains(w.object(layout.RunReportKey("shop", doc.Run.ID)), "web-admin") {
				t.Errorf("the report holds web's value")
			}
		})
	}
	doc := w.wait("shop", w.push("shop", bundleOf(t, map[string]string{"cairn.yaml": cfg, "templates/a.yaml": param("'{{resolve:ssm:/shop/db/user}}'")})))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("shop's own parameter: %s (%s) %v", doc.Run.Status, doc.Run.Reason, doc.Errors)
	}
}

// TestCodeInAFolderNoBundleHoldsIsRefused: a zip uploaded by hand (aws s3 cp) may hold a
// .git folder, which `cairn push` never uploads; a function whose CodeUri names it
// (../.git/, a repository's config with its remote's token) is refused by the deployer
// with the rule `cairn validate` applies (bundle.Excluded), before any change set, and
// nothing is packaged.
func TestCodeInAFolderNoBundleHoldsIsRefused(t *testing.T) {
	w := newWorld(t, worldOptions{})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"cairn.yaml": "namespace: other\nstacks:\n  - name: a\n    template_path: templates/app.yaml\n",
		"templates/app.yaml": "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n" +
			"      Runtime: python3.12\n      Handler: app.handler\n      CodeUri: ../.git/\n",
		".git/config": "[remote \"origin\"]\n\turl = https://token@example.com/x.git\n",
	} {
		f, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	before := w.cfnCalls()
	doc := w.wait("other", w.pushBytes("other", buf.Bytes()))
	want := `templates/app.yaml:8:16: Resources.Fn.Properties.CodeUri: CodeUri of Fn: "../.git/" names .git, in a folder no bundle holds`
	if errs := strings.Join(doc.Errors, "\n"); doc.Run.Status != run.RunFailed || !strings.Contains(errs, want) {
		t.Fatalf("run: %s (%s), errors:\n%s\nwant one containing %q", doc.Run.Status, doc.Run.Reason, errs, want)
	}
	if after := w.cfnCalls(); after["CreateChangeSet"] != before["CreateChangeSet"] {
		t.Errorf("the refused bundle called CloudFormation: %v", after)
	}
	if keys := w.keysUnder(layout.AssetsPrefix); len(keys) != 0 {
		t.Errorf("the refused bundle packaged %v", keys)
	}
}
