package deployer_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestEarlyChangeSets pushes the chain bundle twice more through the emulator with the
// network updated and the database and cache changed (their Size): their change sets are
// made while the network's update runs. When the network's VPC id stays, each is executed
// the moment the network finished, one change set a stack and none deleted; when the VPC
// is replaced (a new id, read by their Value), the change sets made early are never
// executed, new ones of the new id are made and executed, and none is left.
func TestEarlyChangeSets(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, first := deployChain(t, w)
	if !first.Run.Stacks["database"].Early || !first.Run.Stacks["network"].Early {
		t.Fatalf("the chain's stacks read nothing but their parameters, yet are not early: %+v", first.Run.Stacks["database"])
	}

	for _, tc := range []struct {
		name       string
		edit       func()
		vpcChanges bool
	}{
		{"outputs kept", func() {
			edit(t, dir, "templates/network.yaml", "      CidrBlock: !Ref CidrBlock\n", "      CidrBlock: !Ref CidrBlock\n      EnableDnsSupport: true\n")
			edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: small", "      Value: ${output network::VpcId}\n      Size: large")
			edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: small", "      Value: ${output network::VpcId}\n      Size: large")
		}, false},
		{"outputs changed", func() {
			edit(t, dir, "cairn.yaml", "CidrBlock: 10.20.0.0/16", "CidrBlock: 10.30.0.0/16")
			edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: large", "      Value: ${output network::VpcId}\n      Size: medium")
			edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: large", "      Value: ${output network::VpcId}\n      Size: medium")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := w.graph("shop", "shop").Stacks["database"].ParametersHash
			tc.edit()
			before := w.cfnCalls()
			doc := w.wait("shop", w.push("shop", dir))
			if doc.Run.Status != run.Succeeded {
				t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
			}
			network := doc.Run.Stacks["network"]
			for _, n := range []string{"database", "cache"} {
				s := doc.Run.Stacks[n]
				if s.Phase != run.Done || s.MadeEarly {
					t.Errorf("%s: %s (%s), made early %v", n, s.Phase, s.Reason, s.MadeEarly)
				}
				if tc.vpcChanges {
					continue
				}
				// Made while the network's update ran, executed once it finished.
				if !s.StartedAt.Before(network.FinishedAt) || s.ExecutedAt.Before(network.FinishedAt) {
					t.Errorf("%s: change set made %s, executed %s; network executed %s, finished %s",
						n, s.StartedAt.Format("15:04:05.000"), s.ExecutedAt.Format("15:04:05.000"),
						network.ExecutedAt.Format("15:04:05.000"), network.FinishedAt.Format("15:04:05.000"))
				}
			}
			calls := w.cfnCalls()
			created := calls["CreateChangeSet"] - before["CreateChangeSet"]
			deleted := calls["DeleteChangeSet"] - before["DeleteChangeSet"]
			executed := calls["ExecuteChangeSet"] - before["ExecuteChangeSet"]
			// network, database, cache; app and web read names that stay: unchanged.
			want := [3]int{3, 0, 3}
			if tc.vpcChanges {
				// database's and cache's made early, made again; deleted when seen ready
				// before the network finished, else removed by the execution of the new
				// one (none is left: below).
				want = [3]int{5, deleted, 3}
				if deleted > 2 {
					t.Errorf("%d change sets deleted, want at most the 2 that went stale", deleted)
				}
			}
			if got := [3]int{created, deleted, executed}; got != want {
				t.Errorf("change sets created, deleted, executed: %v, want %v", got, want)
			}
			for _, n := range []string{"database", "cache"} {
				out, err := w.cfnc.ListChangeSets(context.Background(), &cloudformation.ListChangeSetsInput{StackName: aws.String(doc.Run.Stacks[n].StackName)})
				if err != nil {
					t.Fatal(err)
				}
				for _, cs := range out.Summaries {
					if aws.ToString(cs.ChangeSetName) != doc.Run.Stacks[n].ChangeSetName {
						t.Errorf("%s: change set %s (%s) left beside the one executed", n, aws.ToString(cs.ChangeSetName), cs.Status)
					}
				}
			}
			db := doc.Run.Stacks["database"]
			if db.Parameters["Value"] != network.Outputs["VpcId"] || db.ParametersHash == prev {
				t.Errorf("database: Value %q, network's VpcId %q (parameters hash %s, was %s)", db.Parameters["Value"], network.Outputs["VpcId"], db.ParametersHash, prev)
			}
			if g := w.graph("shop", "shop"); g.Stacks["database"].ParametersHash != db.ParametersHash {
				t.Errorf("graph: database's parameters hash %s, the run's %s", g.Stacks["database"].ParametersHash, db.ParametersHash)
			}
			for _, n := range []string{"app", "web"} {
				if p := doc.Run.Stacks[n].Phase; p != run.Unchanged {
					t.Errorf("%s: %s, want unchanged", n, p)
				}
			}
		})
	}
}
