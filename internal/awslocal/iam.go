package awslocal

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/stslocal"
)

// iamRole is an IAM role a stack made: what STS needs to let someone assume it. IAM is
// global, so a role belongs to an account, not to a place; its name is unique there.
type iamRole struct {
	arn, account, name, id, trust string
	maxSession                    time.Duration
}

func roleKey(account, name string) string { return account + "/" + name }

// role finds a role for STS.
func (e *Emulator) role(account, name string) (stslocal.Role, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.roles[roleKey(account, name)]
	if r == nil {
		return stslocal.Role{}, false
	}
	return stslocal.Role{ARN: r.arn, Account: r.account, Name: r.name, ID: r.id, Trust: r.trust, MaxSession: r.maxSession}, true
}

// roleID is a role's unique id, AROA and 17 characters, stable for its ARN.
func roleID(arn string) string {
	sum := sha256.Sum256([]byte(arn))
	return "AROA" + base32.StdEncoding.EncodeToString(sum[:])[:17]
}

// roleProvider makes AWS::IAM::Role resources real enough to be assumed: the role's ARN,
// id, trust policy and maximum session duration. Its policies are not evaluated (the
// emulator checks no IAM permissions).
func (p *Place) roleProvider() cfnlocal.Provider {
	e := p.e
	record := func(r cfnlocal.Resource, create bool) (map[string]any, error) {
		path := orDefault(text(r.Props["Path"]), "/")
		arn := "arn:aws:iam::" + p.account + ":role" + path + r.PhysicalID
		role := &iamRole{arn: arn, account: p.account, name: r.PhysicalID, id: roleID(arn), trust: text(r.Props["AssumeRolePolicyDocument"]), maxSession: stslocal.DefaultMaxSession}
		if v := text(r.Props["MaxSessionDuration"]); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 3600 || n > 43200 {
				return nil, fmt.Errorf("1 validation error detected: Value '%s' at 'maxSessionDuration' failed to satisfy constraint: Member must have value between 3600 and 43200", v)
			}
			role.maxSession = time.Duration(n) * time.Second
		}
		if role.trust == "" {
			return nil, fmt.Errorf("Property AssumeRolePolicyDocument cannot be empty.")
		}
		key := roleKey(p.account, r.PhysicalID)
		e.mu.Lock()
		defer e.mu.Unlock()
		if old := e.roles[key]; create && old != nil {
			return nil, fmt.Errorf("Resource of type 'AWS::IAM::Role' with identifier '%s' already exists.", r.PhysicalID)
		}
		e.roles[key] = role
		return map[string]any{"Arn": arn, "RoleId": role.id}, nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			attrs, err := record(r, true)
			return r.PhysicalID, attrs, err
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return record(r, false)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			delete(e.roles, roleKey(p.account, r.PhysicalID))
			return nil
		},
		Restore: func(_ context.Context, r cfnlocal.Resource) error {
			_, err := record(r, false)
			return err
		},
	}
}

// busPolicyProvider makes AWS::Events::EventBusPolicy statements admit other accounts to
// one of the place's buses (the default one unless EventBusName names another): by
// StatementId with Principal (an account id or "*"), or by a Statement document whose
// Allow of events:PutEvents names accounts (ids or root ARNs). Conditions are not
// evaluated.
func (p *Place) busPolicyProvider() cfnlocal.Provider {
	e := p.e
	accounts := func(r cfnlocal.Resource) ([]string, error) {
		if st := object(r.Props["Statement"]); st != nil {
			return policyAccounts([]any{st}), nil
		}
		if a := text(r.Props["Action"]); a != "events:PutEvents" {
			return nil, fmt.Errorf("Action %s: the emulator's bus policies admit events:PutEvents only", a)
		}
		return []string{text(r.Props["Principal"])}, nil
	}
	install := func(r cfnlocal.Resource) error {
		a, err := accounts(r)
		if err != nil {
			return err
		}
		bus := busName(text(r.Props["EventBusName"]))
		e.mu.Lock()
		defer e.mu.Unlock()
		b := p.busLocked(bus)
		if b == nil {
			return fmt.Errorf("Event bus %s does not exist.", bus)
		}
		b.policy[r.PhysicalID] = a
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return nil, install(r)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			if b := p.busLocked(busName(text(r.Props["EventBusName"]))); b != nil {
				delete(b.policy, r.PhysicalID)
			}
			return nil
		},
		Restore: func(_ context.Context, r cfnlocal.Resource) error { return install(r) },
	}
}

// policyAccounts returns the accounts a bus policy's statements allow events:PutEvents
// from (ids or root ARNs, "*" for any).
func policyAccounts(statements []any) []string {
	var out []string
	for _, v := range statements {
		st := object(v)
		if text(st["Effect"]) != "Allow" {
			continue
		}
		principal := st["Principal"]
		if m := object(principal); m != nil {
			principal = m["AWS"]
		}
		for _, v := range append(list(principal), principal) {
			if s, ok := v.(string); ok {
				out = append(out, strings.TrimSuffix(strings.TrimPrefix(s, "arn:aws:iam::"), ":root"))
			}
		}
	}
	return out
}
