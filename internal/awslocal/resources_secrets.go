package awslocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
)

// secretProvider makes AWS::SecretsManager::Secret in the place's Secrets Manager: its
// SecretString, or a value GenerateSecretString makes as GetRandomPassword does (alone, or
// as the GenerateStringKey of the SecretStringTemplate JSON object). Ref and the Id
// attribute are the secret's ARN. CloudFormation deletes the secret without a recovery
// window.
func (p *Place) secretProvider() cfnlocal.Provider {
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			value, err := secretValue(r.Props)
			if err != nil {
				return "", nil, err
			}
			out, err := p.secrets.Create(secretslocal.CreateInput{Name: r.Name("Name", 512), Description: text(r.Props["Description"]),
				KmsKeyId: text(r.Props["KmsKeyId"]), SecretString: value, Tags: secretTags(r.Props["Tags"])})
			if err != nil {
				return "", nil, err
			}
			return out.ARN, map[string]any{"Id": out.ARN}, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			if text(r.Props["Name"]) != text(old["Name"]) {
				return nil, fmt.Errorf("changing a secret's Name replaces it: give the secret a new logical id")
			}
			in := secretslocal.UpdateInput{SecretId: r.PhysicalID}
			desc, key := text(r.Props["Description"]), text(r.Props["KmsKeyId"])
			in.Description, in.KmsKeyId = &desc, &key
			if !sameJSON(r.Props["SecretString"], old["SecretString"]) || !sameJSON(r.Props["GenerateSecretString"], old["GenerateSecretString"]) {
				value, err := secretValue(r.Props)
				if err != nil {
					return nil, err
				}
				in.SecretString = value
			}
			if _, err := p.secrets.Update(in); err != nil {
				return nil, err
			}
			var gone []string
			kept := tagMap(r.Props["Tags"])
			for k := range tagMap(old["Tags"]) {
				if _, ok := kept[k]; !ok {
					gone = append(gone, k)
				}
			}
			return map[string]any{"Id": r.PhysicalID}, p.secrets.Tag(r.PhysicalID, secretTags(r.Props["Tags"]), gone)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			force := true
			_, err := p.secrets.Delete(secretslocal.DeleteInput{SecretId: r.PhysicalID, ForceDeleteWithoutRecovery: &force})
			if isSecretsCode(err, "ResourceNotFoundException") {
				return nil // already gone
			}
			return err
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			d, err := p.secrets.Describe(r.PhysicalID)
			if err != nil || d.DeletedDate != nil {
				return nil, false, nil
			}
			out := map[string]any{"Name": d.Name, "Description": d.Description}
			if d.KmsKeyId != "" {
				out["KmsKeyId"] = d.KmsKeyId
			}
			return out, true, nil
		},
	}
}

// secretValue is an AWS::SecretsManager::Secret's value: its SecretString, or what its
// GenerateSecretString makes; nil when it has neither (the secret then has no version).
func secretValue(props map[string]any) (*string, error) {
	if s, ok := props["SecretString"]; ok {
		if _, both := props["GenerateSecretString"]; both {
			return nil, errors.New("You can't specify both SecretString and GenerateSecretString.")
		}
		v := text(s)
		return &v, nil
	}
	g, ok := props["GenerateSecretString"].(map[string]any)
	if !ok {
		return nil, nil
	}
	flag := func(k string) bool { return text(g[k]) == "true" }
	in := secretslocal.PasswordInput{ExcludeCharacters: text(g["ExcludeCharacters"]), ExcludeNumbers: flag("ExcludeNumbers"),
		ExcludePunctuation: flag("ExcludePunctuation"), ExcludeUppercase: flag("ExcludeUppercase"), ExcludeLowercase: flag("ExcludeLowercase"),
		IncludeSpace: flag("IncludeSpace")}
	if v, ok := g["RequireEachIncludedType"]; ok {
		b := text(v) == "true"
		in.RequireEachIncludedType = &b
	}
	if v := text(g["PasswordLength"]); v != "" {
		if _, err := fmt.Sscan(v, &in.PasswordLength); err != nil {
			return nil, fmt.Errorf("GenerateSecretString.PasswordLength %q is not a number", v)
		}
	}
	template, key := text(g["SecretStringTemplate"]), text(g["GenerateStringKey"])
	if (template == "") != (key == "") {
		return nil, errors.New("SecretStringTemplate and GenerateStringKey must both be set, or neither.")
	}
	password, err := secretslocal.Password(in)
	if err != nil {
		return nil, err
	}
	if template == "" {
		return &password, nil
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(template), &doc); err != nil {
		return nil, fmt.Errorf("SecretStringTemplate is not a JSON object: %v", err)
	}
	doc[key] = password
	b, _ := json.Marshal(doc)
	v := string(b)
	return &v, nil
}

func secretTags(v any) []secretslocal.Tag {
	var out []secretslocal.Tag
	for _, t := range list(v) {
		m := object(t)
		out = append(out, secretslocal.Tag{Key: text(m["Key"]), Value: text(m["Value"])})
	}
	return out
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func isSecretsCode(err error, code string) bool {
	var e *secretslocal.Error
	return errors.As(err, &e) && e.Code == code
}

// dbTarget is what a SecretTargetAttachment writes into a secret about its database.
type dbTarget struct {
	engine, host, idKey string
	port                int
}

// databaseProvider stands in for AWS::RDS::DBInstance (cluster false) and
// AWS::RDS::DBCluster (cluster true), which the emulator otherwise simulates, for what
// other resources can see of them: with ManageMasterUserPassword, RDS's managed master
// user secret (named rds!db-... or rds!cluster-..., owned by RDS, holding the username and
// a generated password; MasterUserSecret.SecretArn is its ARN), deleted with the database;
// and the endpoint a SecretTargetAttachment writes into a secret.
// See https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-secrets-manager.html
func (p *Place) databaseProvider(cluster bool) cfnlocal.Provider {
	kind, idKey := "db", "dbInstanceIdentifier"
	if cluster {
		kind, idKey = "cluster", "dbClusterIdentifier"
	}
	endpoint := func(r cfnlocal.Resource) map[string]any {
		port := text(r.Props["Port"])
		if port == "" {
			port = defaultPort(text(r.Props["Engine"]))
		}
		host := fmt.Sprintf("%s.%s.%s.rds.amazonaws.com", r.PhysicalID, hostID(r.StackID+"/"+r.LogicalID), p.region)
		if cluster {
			host = fmt.Sprintf("%s.cluster-%s.%s.rds.amazonaws.com", r.PhysicalID, hostID(r.StackID+"/"+r.LogicalID), p.region)
		}
		attrs := map[string]any{"Endpoint.Address": host, "Endpoint.Port": port}
		if cluster {
			attrs["ReadEndpoint.Address"] = strings.Replace(host, ".cluster-", ".cluster-ro-", 1)
			attrs["DBClusterArn"] = fmt.Sprintf("arn:aws:rds:%s:%s:cluster:%s", p.region, p.account, r.PhysicalID)
		} else {
			attrs["DBInstanceArn"] = fmt.Sprintf("arn:aws:rds:%s:%s:db:%s", p.region, p.account, r.PhysicalID)
		}
		return attrs
	}
	remember := func(r cfnlocal.Resource, attrs map[string]any) {
		port, _ := strconv.Atoi(text(attrs["Endpoint.Port"]))
		p.e.mu.Lock()
		p.databases[r.PhysicalID] = dbTarget{engine: text(r.Props["Engine"]), host: text(attrs["Endpoint.Address"]), port: port, idKey: idKey}
		p.e.mu.Unlock()
	}
	managed := func(r cfnlocal.Resource) bool { return text(r.Props["ManageMasterUserPassword"]) == "true" }
	makeSecret := func(r cfnlocal.Resource, attrs map[string]any) error {
		if text(r.Props["MasterUserPassword"]) != "" {
			return errors.New("You can't specify MasterUserPassword and ManageMasterUserPassword together: RDS makes the password of a managed master user.")
		}
		password, err := secretslocal.Password(secretslocal.PasswordInput{PasswordLength: 28, ExcludeCharacters: `"@/\` + "'"})
		if err != nil {
			return err
		}
		value, _ := json.Marshal(map[string]string{"username": text(r.Props["MasterUsername"]), "password": password})
		v := string(value)
		dbARN := text(attrs["DBInstanceArn"]) + text(attrs["DBClusterArn"])
		tagKey := "aws:rds:primaryDBInstanceArn"
		if cluster {
			tagKey = "aws:rds:primaryDBClusterArn"
		}
		out, err := p.secrets.Create(secretslocal.CreateInput{Name: "rds!" + kind + "-" + newID(), SecretString: &v,
			Description: "Secret associated with primary RDS DB " + map[bool]string{false: "instance", true: "cluster"}[cluster] + ": " + dbARN,
			KmsKeyId:    text(object(r.Props["MasterUserSecret"])["KmsKeyId"]), OwningService: "rds",
			Tags: []secretslocal.Tag{{Key: tagKey, Value: dbARN}, {Key: "aws:secretsmanager:owningService", Value: "rds"}}})
		if err != nil {
			return err
		}
		attrs["MasterUserSecret.SecretArn"] = out.ARN
		return nil
	}
	dropSecret := func(arn string) error {
		if arn == "" {
			return nil
		}
		force := true
		_, err := p.secrets.Delete(secretslocal.DeleteInput{SecretId: arn, ForceDeleteWithoutRecovery: &force})
		if isSecretsCode(err, "ResourceNotFoundException") {
			return nil
		}
		return err
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			attrs := endpoint(r)
			if managed(r) {
				if err := makeSecret(r, attrs); err != nil {
					return "", nil, err
				}
			}
			remember(r, attrs)
			return r.PhysicalID, attrs, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			attrs := endpoint(r)
			old := text(r.Attrs["MasterUserSecret.SecretArn"])
			switch {
			case managed(r) && old != "":
				attrs["MasterUserSecret.SecretArn"] = old
			case managed(r):
				if err := makeSecret(r, attrs); err != nil {
					return nil, err
				}
			default:
				if err := dropSecret(old); err != nil {
					return nil, err
				}
			}
			remember(r, attrs)
			return attrs, nil
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			p.e.mu.Lock()
			delete(p.databases, r.PhysicalID)
			p.e.mu.Unlock()
			return dropSecret(text(r.Attrs["MasterUserSecret.SecretArn"]))
		},
		Restore: func(_ context.Context, r cfnlocal.Resource) error {
			remember(r, endpoint(r))
			return nil
		},
	}
}

// secretTargetAttachmentProvider makes AWS::SecretsManager::SecretTargetAttachment: a new
// AWSCURRENT version of the secret's JSON with the database's engine, host, port and
// identifier added, as the attachment does for a database of a stack in this place.
func (p *Place) secretTargetAttachmentProvider() cfnlocal.Provider {
	attach := func(r cfnlocal.Resource) error {
		target := text(r.Props["TargetId"])
		p.e.mu.Lock()
		db, ok := p.databases[lastSegment(target)]
		p.e.mu.Unlock()
		if !ok {
			return fmt.Errorf("TargetId %s: the emulator knows only the databases of its own stacks in this account and region", target)
		}
		cur, err := p.secrets.Get(secretslocal.GetInput{SecretId: text(r.Props["SecretId"])})
		if err != nil {
			return err
		}
		doc := map[string]any{}
		if cur.SecretString == nil || json.Unmarshal([]byte(*cur.SecretString), &doc) != nil {
			return fmt.Errorf("secret %s does not hold a JSON object: a SecretTargetAttachment adds its database's connection keys to one", cur.Name)
		}
		doc["engine"], doc["host"], doc["port"], doc[db.idKey] = engineName(db.engine), db.host, db.port, lastSegment(target)
		b, _ := json.Marshal(doc)
		v := string(b)
		_, err = p.secrets.Put(secretslocal.PutInput{SecretId: cur.ARN, SecretString: &v})
		return err
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			arn, ok := p.secrets.ARN(text(r.Props["SecretId"]))
			if !ok {
				return "", nil, errors.New("Secrets Manager can't find the specified secret.")
			}
			return arn, nil, attach(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, attach(r)
		},
		Delete: func(context.Context, cfnlocal.Resource) error { return nil },
	}
}

// engineName is the engine a SecretTargetAttachment writes: RDS's engine family.
func engineName(engine string) string {
	switch {
	case strings.HasPrefix(engine, "aurora-postgresql"), strings.HasPrefix(engine, "postgres"):
		return "postgres"
	case strings.HasPrefix(engine, "aurora"), strings.HasPrefix(engine, "mysql"):
		return "mysql"
	}
	return engine
}

// defaultPort is an RDS engine's default port.
func defaultPort(engine string) string {
	switch {
	case strings.Contains(engine, "postgres"):
		return "5432"
	case strings.HasPrefix(engine, "oracle"):
		return "1521"
	case strings.HasPrefix(engine, "sqlserver"):
		return "1433"
	}
	return "3306"
}

// hostID is the account-and-region part of an RDS endpoint, stable for one resource.
func hostID(seed string) string {
	h := fnv.New64a()
	h.Write([]byte(seed))
	return "c" + strconv.FormatUint(h.Sum64()|1<<63, 36)[:11]
}
