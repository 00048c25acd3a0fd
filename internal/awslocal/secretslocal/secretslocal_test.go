package secretslocal_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func start(t *testing.T, dir string, clk clock.Clock) (*sm.Client, *secretslocal.Service) {
	t.Helper()
	svc, err := secretslocal.New(secretslocal.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(func() { srv.Close(); svc.Close() })
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return sm.NewFromConfig(cfg), svc
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

func value(t *testing.T, c *sm.Client, in *sm.GetSecretValueInput) string {
	t.Helper()
	out, err := c.GetSecretValue(context.Background(), in)
	if err != nil {
		t.Fatalf("get %s: %v", aws.ToString(in.SecretId), err)
	}
	return aws.ToString(out.SecretString)
}

// stages renders a secret's versions as value:stages, oldest first.
func stages(t *testing.T, c *sm.Client, id string) string {
	t.Helper()
	ctx := context.Background()
	out, err := c.ListSecretVersionIds(ctx, &sm.ListSecretVersionIdsInput{SecretId: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, v := range out.Versions {
		val := value(t, c, &sm.GetSecretValueInput{SecretId: aws.String(id), VersionId: v.VersionId})
		st := slices.Clone(v.VersionStages)
		sort.Strings(st)
		parts = append(parts, val+":"+strings.Join(st, "+"))
	}
	return strings.Join(parts, " ")
}

// TestSecretVersionsAndStages: a new value becomes AWSCURRENT and the one before
// AWSPREVIOUS; other labels move as asked; versions are read by id or label; a retry with
// the same token is the same version, with another value a conflict.
func TestSecretVersionsAndStages(t *testing.T) {
	c, _ := start(t, "", clock.NewFake(epoch))
	ctx := context.Background()
	created, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("shop/db"), SecretString: aws.String(`{"password":"one"}`),
		Description: aws.String("the database"), Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("pay")}}})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(created.ARN)
	if !strings.HasPrefix(arn, "arn:aws:secretsmanager:us-east-1:000000000000:secret:shop/db-") || len(arn) != len("arn:aws:secretsmanager:us-east-1:000000000000:secret:shop/db-")+6 {
		t.Fatalf("ARN %s", arn)
	}
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("shop/db"), SecretString: aws.String("x")}); code(err) != "ResourceExistsException" {
		t.Fatalf("create twice: %v", err)
	}
	two, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String("shop/db"), SecretString: aws.String(`{"password":"two"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := stages(t, c, "shop/db"); got != `{"password":"one"}:AWSPREVIOUS {"password":"two"}:AWSCURRENT` {
		t.Fatalf("after a put: %s", got)
	}
	token := "0123456789abcdef0123456789abcdef"
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String("pending"),
		ClientRequestToken: aws.String(token), VersionStages: []string{"AWSPENDING"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String("pending"),
		ClientRequestToken: aws.String(token), VersionStages: []string{"AWSPENDING"}}); err != nil {
		t.Fatalf("a retry with the same token and value: %v", err)
	}
	if _, err := c.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String("other"),
		ClientRequestToken: aws.String(token)}); code(err) != "ResourceExistsException" {
		t.Fatalf("the same token with another value: %v", err)
	}
	if got := value(t, c, &sm.GetSecretValueInput{SecretId: aws.String("shop/db"), VersionStage: aws.String("AWSPENDING")}); got != "pending" {
		t.Fatalf("AWSPENDING = %q", got)
	}
	// Rotation's last step: AWSCURRENT moves to the pending version.
	if _, err := c.UpdateSecretVersionStage(ctx, &sm.UpdateSecretVersionStageInput{SecretId: aws.String("shop/db"), VersionStage: aws.String("AWSCURRENT"),
		MoveToVersionId: aws.String(token)}); code(err) != "InvalidParameterException" {
		t.Fatalf("moving AWSCURRENT without saying from where: %v", err)
	}
	if _, err := c.UpdateSecretVersionStage(ctx, &sm.UpdateSecretVersionStageInput{SecretId: aws.String("shop/db"), VersionStage: aws.String("AWSCURRENT"),
		MoveToVersionId: aws.String(token), RemoveFromVersionId: two.VersionId}); err != nil {
		t.Fatal(err)
	}
	if got := stages(t, c, "shop/db"); got != `{"password":"two"}:AWSPREVIOUS pending:AWSCURRENT+AWSPENDING` {
		t.Fatalf("after rotation: %s", got)
	}
	if _, err := c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String("shop/db"), VersionStage: aws.String("NOPE")}); code(err) != "ResourceNotFoundException" {
		t.Fatalf("a label no version has: %v", err)
	}
	// The partial ARN (without the random suffix) names the secret too.
	if got := value(t, c, &sm.GetSecretValueInput{SecretId: aws.String(arn[:len(arn)-7])}); got != "pending" {
		t.Fatalf("by partial ARN: %q", got)
	}
	if _, err := c.UpdateSecret(ctx, &sm.UpdateSecretInput{SecretId: aws.String("shop/db"), Description: aws.String("new"), SecretString: aws.String("three")}); err != nil {
		t.Fatal(err)
	}
	// "two" lost AWSPREVIOUS to "pending": a version without labels is not described.
	d, err := c.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String("shop/db")})
	if err != nil || aws.ToString(d.Description) != "new" || len(d.VersionIdsToStages) != 2 || len(d.Tags) != 1 || d.LastAccessedDate == nil {
		t.Fatalf("describe: %+v %v", d, err)
	}
	if got := value(t, c, &sm.GetSecretValueInput{SecretId: aws.String("shop/db")}); got != "three" {
		t.Fatalf("after UpdateSecret: %q", got)
	}
	bin, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("bin"), SecretBinary: []byte{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: bin.ARN})
	if err != nil || string(got.SecretBinary) != "\x00\x01\x02" || got.SecretString != nil {
		t.Fatalf("binary secret: %+v %v", got, err)
	}
}

// TestDeleteAndRestore: DeleteSecret schedules the deletion after the recovery window on
// the clock; meanwhile the secret cannot be read, its name cannot be taken, and
// RestoreSecret brings it back; ForceDeleteWithoutRecovery deletes at once.
func TestDeleteAndRestore(t *testing.T) {
	clk := clock.NewFake(epoch)
	c, _ := start(t, "", clk)
	ctx := context.Background()
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("temp"), SecretString: aws.String("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp"), RecoveryWindowInDays: aws.Int64(3)}); code(err) != "InvalidParameterException" {
		t.Fatalf("a 3-day window: %v", err)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp"), RecoveryWindowInDays: aws.Int64(7), ForceDeleteWithoutRecovery: aws.Bool(true)}); code(err) != "InvalidParameterException" {
		t.Fatalf("a window and force together: %v", err)
	}
	del, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp"), RecoveryWindowInDays: aws.Int64(7)})
	if err != nil || !del.DeletionDate.Equal(epoch.Add(7*24*time.Hour)) {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, err := c.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String("temp")}); code(err) != "InvalidRequestException" {
		t.Fatalf("read a secret scheduled for deletion: %v", err)
	}
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("temp")}); code(err) != "InvalidRequestException" {
		t.Fatalf("take a name scheduled for deletion: %v", err)
	}
	list, _ := c.ListSecrets(ctx, &sm.ListSecretsInput{})
	planned, _ := c.ListSecrets(ctx, &sm.ListSecretsInput{IncludePlannedDeletion: aws.Bool(true)})
	if len(list.SecretList) != 0 || len(planned.SecretList) != 1 || planned.SecretList[0].DeletedDate == nil {
		t.Fatalf("list while scheduled: %d, with planned deletions %+v", len(list.SecretList), planned.SecretList)
	}
	if _, err := c.RestoreSecret(ctx, &sm.RestoreSecretInput{SecretId: aws.String("temp")}); err != nil {
		t.Fatal(err)
	}
	if got := value(t, c, &sm.GetSecretValueInput{SecretId: aws.String("temp")}); got != "v" {
		t.Fatalf("after restore: %q", got)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp")}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30*24*time.Hour - time.Second)
	if _, err := c.RestoreSecret(ctx, &sm.RestoreSecretInput{SecretId: aws.String("temp")}); err != nil {
		t.Fatalf("restore within the default 30 days: %v", err)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp")}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * 24 * time.Hour)
	if _, err := c.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String("temp")}); code(err) != "ResourceNotFoundException" {
		t.Fatalf("after the window: %v", err)
	}
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("temp"), SecretString: aws.String("new")}); err != nil {
		t.Fatalf("the name is free after the window: %v", err)
	}
	if _, err := c.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String("temp"), ForceDeleteWithoutRecovery: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("temp"), SecretString: aws.String("newer")}); err != nil {
		t.Fatalf("the name is free after a forced delete: %v", err)
	}
}

func TestListSecretsFiltersAndPages(t *testing.T) {
	clk := clock.NewFake(epoch)
	c, _ := start(t, "", clk)
	ctx := context.Background()
	for _, s := range []struct{ name, team string }{{"app/a", "pay"}, {"app/b", "ops"}, {"db/c", "pay"}} {
		if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String(s.name), SecretString: aws.String("v"),
			Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String(s.team)}}}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	names := func(in *sm.ListSecretsInput) string {
		t.Helper()
		out, err := c.ListSecrets(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, e := range out.SecretList {
			n = append(n, aws.ToString(e.Name))
		}
		return strings.Join(n, ",")
	}
	for _, tt := range []struct {
		filters []types.Filter
		order   types.SortOrderType
		want    string
	}{
		{nil, types.SortOrderTypeAsc, "app/a,app/b,db/c"},
		{nil, types.SortOrderTypeDesc, "db/c,app/b,app/a"},
		{[]types.Filter{{Key: types.FilterNameStringTypeName, Values: []string{"app/"}}}, types.SortOrderTypeAsc, "app/a,app/b"},
		{[]types.Filter{{Key: types.FilterNameStringTypeTagValue, Values: []string{"PAY"}}}, types.SortOrderTypeAsc, "app/a,db/c"},
		{[]types.Filter{{Key: types.FilterNameStringTypeName, Values: []string{"!app"}}}, types.SortOrderTypeAsc, "db/c"},
	} {
		if got := names(&sm.ListSecretsInput{Filters: tt.filters, SortOrder: tt.order}); got != tt.want {
			t.Errorf("filters %+v: %s, want %s", tt.filters, got, tt.want)
		}
	}
	page, err := c.ListSecrets(ctx, &sm.ListSecretsInput{MaxResults: aws.Int32(2), SortOrder: types.SortOrderTypeAsc})
	if err != nil || len(page.SecretList) != 2 || page.NextToken == nil || page.SecretList[0].SecretVersionsToStages == nil {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := c.ListSecrets(ctx, &sm.ListSecretsInput{MaxResults: aws.Int32(2), SortOrder: types.SortOrderTypeAsc, NextToken: page.NextToken})
	if err != nil || len(rest.SecretList) != 1 || rest.NextToken != nil {
		t.Fatalf("last page: %+v %v", rest, err)
	}
	if _, err := c.TagResource(ctx, &sm.TagResourceInput{SecretId: aws.String("db/c"), Tags: []types.Tag{{Key: aws.String("tier"), Value: aws.String("gold")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UntagResource(ctx, &sm.UntagResourceInput{SecretId: aws.String("db/c"), TagKeys: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	d, _ := c.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String("db/c")})
	if len(d.Tags) != 1 || aws.ToString(d.Tags[0].Key) != "tier" {
		t.Fatalf("tags: %+v", d.Tags)
	}
	batch, err := c.BatchGetSecretValue(ctx, &sm.BatchGetSecretValueInput{SecretIdList: []string{"app/a", "nope"}})
	if err != nil || len(batch.SecretValues) != 1 || len(batch.Errors) != 1 || aws.ToString(batch.Errors[0].ErrorCode) != "ResourceNotFoundException" {
		t.Fatalf("batch get: %+v %v", batch, err)
	}
}

func TestRandomPassword(t *testing.T) {
	c, _ := start(t, "", nil)
	ctx := context.Background()
	out, err := c.GetRandomPassword(ctx, &sm.GetRandomPasswordInput{})
	if err != nil || len(aws.ToString(out.RandomPassword)) != 32 {
		t.Fatalf("default password: %v %v", out, err)
	}
	for range 20 {
		out, err := c.GetRandomPassword(ctx, &sm.GetRandomPasswordInput{PasswordLength: aws.Int64(12), ExcludePunctuation: aws.Bool(true), ExcludeCharacters: aws.String("abc0")})
		if err != nil {
			t.Fatal(err)
		}
		p := aws.ToString(out.RandomPassword)
		if len(p) != 12 || strings.ContainsAny(p, "abc0!@#$%^&*()-_") || !strings.ContainsAny(p, "0123456789") ||
			!strings.ContainsAny(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(p, "defghijklmnopqrstuvwxyz") {
			t.Fatalf("password %q breaks its rules", p)
		}
	}
	if _, err := c.GetRandomPassword(ctx, &sm.GetRandomPasswordInput{PasswordLength: aws.Int64(2)}); code(err) != "InvalidParameterException" {
		t.Fatalf("two characters for four required classes: %v", err)
	}
}

// TestSecretsAtRest: values survive a restart and are never in the state file in clear.
func TestSecretsAtRest(t *testing.T) {
	dir := t.TempDir()
	c, svc := start(t, dir, nil)
	ctx := context.Background()
	if _, err := c.CreateSecret(ctx, &sm.CreateSecretInput{Name: aws.String("kept"), SecretString: aws.String("hunter2-in-clear")}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(filepath.Join(dir, "secrets.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "hunter2") {
		t.Fatal("the state file holds a secret value in clear")
	}
	again, _ := start(t, dir, nil)
	if got := value(t, again, &sm.GetSecretValueInput{SecretId: aws.String("kept")}); got != "hunter2-in-clear" {
		t.Fatalf("after a restart: %q", got)
	}
}
