package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

// TestSecretOutputInATagIsRefused: a tag reading a secret output of a stack of the config,
// by ${output}, ${xref} or ${cfn}, is an error where it is written, when the bundle loads
// (before: validate passed it, and only the deployer refused it at the stack's turn);
// a tag reading a plain output of the same stack is fine.
func TestSecretOutputInATagIsRefused(t *testing.T) {
	db := "Parameters:\n  Password:\n    Type: String\n    NoEcho: true\nResources:\n  Secret:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Ref Password\n" +
		"Outputs:\n  Password:\n    Value: !GetAtt Secret.Value\n  Name:\n    Value: !Ref Secret\n"
	app := "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n"
	for _, tc := range []struct {
		name, tag, want string
	}{
		{"output", "${output db::Password}", "cairn.yaml:10:14: stacks[1].tags.Owner: tag Owner reads output Password of stack db, which is secret"},
		{"xref", "${xref shop-db::Password}", "tag Owner reads output Password of stack db, which is secret"},
		{"cfn", "${cfn shop-db.Password}", "tag Owner reads output Password of stack db, which is secret"},
		{"a plain output", "${output db::Name}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := "namespace: shop\nstacks:\n  - name: db\n    template_path: db.yaml\n    parameters: {Password: hunter22}\n  - name: app\n    template_path: app.yaml\n    requires: [db]\n    tags:\n      Owner: '" + tc.tag + "'\n"
			for name, body := range map[string]string{"cairn.yaml": cfg, "db.yaml": db, "app.yaml": app} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := bundle.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LoadOptions{Today: runtimeDay}.Load(b)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Load: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOutputsRead: the ${output} lookups a parameter value reads, as written.
func TestOutputsRead(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  [][2]string
	}{
		{"${output database::SecretArn}", [][2]string{{"database", "SecretArn"}}},
		{"prefix-${output a::X}-${output b::Y}", [][2]string{{"a", "X"}, {"b", "Y"}}},
		{"${xref shop-db::Secret}", nil},
		{"plain", nil},
	} {
		got := OutputsRead(tc.value)
		if len(got) != len(tc.want) {
			t.Fatalf("OutputsRead(%q) = %v, want %v", tc.value, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("OutputsRead(%q) = %v, want %v", tc.value, got, tc.want)
			}
		}
	}
}
