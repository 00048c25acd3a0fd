package deployer_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestSSMAccessDeniedFailsTheRun: a lookup of a parameter the deployer's role may not read
// (outside cairn:ssmPaths) fails the run at once, before any change set, with what was
// refused and how to allow it; the upload is not retried until it dead-letters.
func TestSSMAccessDeniedFailsTheRun(t *testing.T) {
	w := newWorld(t, worldOptions{DenySSM: "/other/"})
	w.putLookupParameters()
	w.putParameter("/other/size", "String", "huge")
	dir := copyBundle(t, lookupsBundle)
	edit(t, dir, "cairn.yaml", "Value: ${ssm /shop/${var env}/size}", "Value: ${ssm /other/size}")
	before := w.cfnCalls()
	doc := w.wait("shop", w.push("shop", dir))
	want := "no plan: SSM refused to read the parameters /other/size, /shop/prod/db/password, /shop/prod/other: AccessDeniedException: User: arn:aws:sts::000000000000:assumed-role/cairn-DeployerRole/cairn-deployer " +
		"is not authorized to perform: ssm:GetParameters on resource: arn:aws:ssm:us-east-1:000000000000:parameter/other/size because no identity-based policy allows " +
		"the ssm:GetParameters action: the deployer's role reads only the Parameter Store paths of cairn's CDK context cairn:ssmPaths (default /NAMESPACE/*): " +
		"add the path there and deploy cairn again (make deploy), or move the parameter"
	if doc.Run.Status != run.RunFailed || doc.Run.Reason != want {
		t.Fatalf("run %s, reason %q; want failed with %q", doc.Run.Status, doc.Run.Reason, want)
	}
	if n := w.cfnCalls()["CreateChangeSet"] - before["CreateChangeSet"]; n != 0 {
		t.Errorf("%d change sets made, want none", n)
	}
	if report := w.object("runs/shop/" + doc.Run.ID + ".md"); !strings.Contains(report, "cairn:ssmPaths") {
		t.Errorf("the run report does not say how to allow the read:\n%s", report)
	}
	if strings.Contains(doc.Run.Reason, "operation error") || strings.Contains(doc.Run.Reason, "RequestID") {
		t.Errorf("the reason holds the SDK's dump: %s", doc.Run.Reason)
	}
}
