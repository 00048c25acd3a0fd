package report

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/verdict"
)

// TestPolicyMarkdown: the comment's and report's Policy section: the outcome, each result
// in a row (an overridden denial so marked), the overrides with author and reason, the
// override command of each standing rule, where the policies were read; a hostile message
// cannot end its cell, row or section.
func TestPolicyMarkdown(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	v := verdict.Judged(verdict.Plan, verdict.Answer{
		Results: []verdict.Result{
			{Level: verdict.Deny, Rule: "cairn.s3_public", Origin: "team", Stack: "web", Resource: "Site", Msg: "bucket Site | is public\n## Approved"},
			{Level: verdict.Deny, Rule: "shop.tags", Origin: "bundle", Stack: "web", Resource: "Site", Msg: "no tags"},
			{Level: verdict.Warn, Rule: "cairn.encryption", Origin: "team", Stack: "db", Msg: "computed"},
		},
		Source: verdict.Source{Bucket: "cairn-1-us-east-1", Prefix: "policies/", Objects: []verdict.Object{{Key: "policies/s3.rego", VersionID: "3HL4kqtJlcpXroDTDmJ", ETag: `"abc"`}}, BundleDir: "rules", BundleFiles: 1},
	}, at, []verdict.Override{{Rule: "shop.tags", Reason: "tags <b>later</b>", By: "arn:aws:sts::1:assumed-role/policy/alice", At: at}})
	got := PolicyMarkdown(v, "shop", "P1")
	want := "## Policy: **denied** (1 denied, 1 overridden, 1 warnings)\n\n" +
		"| Level | Rule | Origin | Stack | Resource | Message |\n|---|---|---|---|---|---|\n" +
		"| deny | `cairn.s3_public` | team | web | Site | bucket Site \\| is public ## Approved |\n" +
		"| deny (overridden) | `shop.tags` | bundle | web | Site | no tags |\n" +
		"| warn | `cairn.encryption` | team | db |  | computed |\n\n" +
		"- Override of `shop.tags` by arn:aws:sts::1:assumed-role/policy/alice at 2026-12-07T09:00:00Z: tags &lt;b&gt;later&lt;/b&gt;\n\n" +
		"This plan cannot be approved or applied while a denial stands: fix the change and plan again, or have the policy owner override each rule for this plan:\n\n" +
		"- `cairn policy override shop P1 cairn.s3_public --reason TEXT`\n\n" +
		"Read: team policies from s3://cairn-1-us-east-1/policies/: 1 file(s): policies/s3.rego (version …XroDTDmJ, ETag abc); bundle policies from rules: 1 file(s).\n\n"
	if got != want {
		t.Errorf("PolicyMarkdown:\n%s\nwant:\n%s", got, want)
	}
	if PolicyMarkdown(nil, "shop", "P1") != "" {
		t.Error("a plan judged by no policies shows a Policy section")
	}
}
