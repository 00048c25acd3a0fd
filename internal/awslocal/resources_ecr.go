package awslocal

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

// repositoryProvider makes AWS::ECR::Repository resources real repositories of the place's
// registry (CDK's bootstrap stack makes one for image assets): Ref is the name, Fn::GetAtt
// gives Arn and RepositoryUri. Deleting a repository that holds images fails, as in AWS,
// unless EmptyOnDelete is true.
func (p *Place) repositoryProvider() cfnlocal.Provider {
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			repo, err := p.ecr.Create(r.PhysicalID, text(r.Props["ImageTagMutability"]))
			if err != nil {
				return "", nil, err
			}
			return repo.Name, map[string]any{"Arn": repo.ARN, "RepositoryUri": repo.URI}, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			repos, err := p.ecr.Repositories([]string{r.PhysicalID})
			if err != nil {
				return nil, err
			}
			return map[string]any{"Arn": repos[0].ARN, "RepositoryUri": repos[0].URI}, nil
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			_, err := p.ecr.Delete(r.PhysicalID, text(r.Props["EmptyOnDelete"]) == "true")
			if err != nil && strings.Contains(err.Error(), "RepositoryNotFoundException") {
				return nil // already gone
			}
			if err != nil {
				return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "ecr "))
			}
			return nil
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			if _, err := p.ecr.Repositories([]string{r.PhysicalID}); err != nil {
				return nil, false, nil
			}
			return map[string]any{"RepositoryName": r.PhysicalID}, true, nil
		},
	}
}
