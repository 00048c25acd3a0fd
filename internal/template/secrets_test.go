package template

import (
	"slices"
	"testing"
)

func TestSecretPropertiesAndOutputs(t *testing.T) {
	tp, err := Parse([]byte(`Parameters:
  Password: {Type: String, NoEcho: true}
  User: {Type: String}
  FromSSM: {Type: String}
Resources:
  Credential:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value: !Sub "${User}:${Password}"
      Description: !Ref User
  Db:
    Type: AWS::RDS::DBInstance
    Properties:
      MasterUserPassword: "{{resolve:secretsmanager:db:SecretString:password}}"
      MasterUsername: !Ref User
      Tags:
        - {Key: plain, Value: x}
        - {Key: pw, Value: !Join ["", [!Ref Password, "-suffix"]]}
      Nested: {Deep: {Key: !If [Cond, !Ref FromSSM, none]}, Literal: "${Password}"}
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      DisplayName: !Sub ["${X}", {X: !Ref Password}]
Outputs:
  Secret: {Value: !Ref Password}
  Joined: {Value: !Join [":", [!Ref User, !Ref Password]]}
  Attr: {Value: !GetAtt Credential.Value}
  SubAttr: {Value: !Sub "${Credential.Value}"}
  Name: {Value: !Ref Credential}
  Plain: {Value: !Ref User}
  FromSSM: {Value: !Ref FromSSM}
`))
	if err != nil {
		t.Fatal(err)
	}
	props := tp.Secrecy(Sources{}).Properties
	want := map[string][]string{
		"Credential": {"/Value"},
		"Db":         {"/MasterUserPassword", "/Tags/1/Value"},
		"Topic":      {"/DisplayName"},
	}
	for id, paths := range want {
		got := slices.Clone(props[id])
		slices.Sort(got)
		if !slices.Equal(got, paths) {
			t.Errorf("%s: secret properties %v, want %v", id, got, paths)
		}
	}
	if len(props) != len(want) {
		t.Errorf("secret properties %v", props)
	}
	if got := tp.Secrecy(Sources{}).Outputs; !slices.Equal(got, []string{"Attr", "Joined", "Secret", "SubAttr"}) {
		t.Errorf("secret outputs %v", got)
	}
	// A parameter known to receive a SecureString is as secret.
	secret := Sources{Parameters: map[string]bool{"FromSSM": true}}
	if got := tp.Secrecy(secret).Outputs; !slices.Contains(got, "FromSSM") {
		t.Errorf("secret outputs with FromSSM secret: %v", got)
	}
	if got := tp.Secrecy(secret).Properties["Db"]; !slices.Contains(got, "/Nested/Deep/Key") {
		t.Errorf("Db with FromSSM secret: %v", got)
	}
	for path, want := range map[string]bool{"/Value": true, "/Value/x": true, "/": true, "/Description": false, "/Val": false} {
		if IsSecretPath(path, []string{"/Value"}) != want {
			t.Errorf("IsSecretPath(%q) != %v", path, want)
		}
	}
	if !IsSecretPath("/Anything", []string{"*"}) || IsSecretPath("/A", nil) {
		t.Error("IsSecretPath of * or of none")
	}
}
