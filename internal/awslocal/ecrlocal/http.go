package ecrlocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/awsjson"
)

// protocol is how the service speaks AWS JSON 1.1 (X-Amz-Target AmazonEC2ContainerRegistry_V20150921.ACTION).
var protocol = awsjson.Protocol{MaxBody: 4 << 20, Internal: "ServerException"}

// ServeHTTP serves the AWS JSON 1.1 protocol: X-Amz-Target AmazonEC2ContainerRegistry_V20150921.ACTION, a JSON body.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { protocol.Serve(w, r, s.call) }

type imageID struct {
	ImageDigest string `json:"imageDigest,omitempty"`
	ImageTag    string `json:"imageTag,omitempty"`
}

func ids(in []imageID) []ImageID {
	out := make([]ImageID, len(in))
	for i, id := range in {
		out[i] = ImageID{Digest: id.ImageDigest, Tag: id.ImageTag}
	}
	return out
}

// epoch is a timestamp as AWS JSON 1.1 sends it: seconds since 1970, fractional.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func (s *Service) repositoryJSON(r Repository) map[string]any {
	return map[string]any{"repositoryName": r.Name, "repositoryArn": r.ARN, "repositoryUri": r.URI, "registryId": r.RegistryID,
		"createdAt": epoch(r.Created), "imageTagMutability": r.Mutability,
		"imageScanningConfiguration": map[string]any{"scanOnPush": false}, "encryptionConfiguration": map[string]any{"encryptionType": "AES256"}}
}

func (s *Service) call(action string, body []byte) (any, error) {
	decode := func(v any) error {
		if err := json.Unmarshal(body, v); err != nil {
			return &Error{Code: "SerializationException", Message: "could not read the request: " + err.Error(), Status: 400}
		}
		return nil
	}
	var in struct {
		RegistryID             string    `json:"registryId"`
		RepositoryName         string    `json:"repositoryName"`
		RepositoryNames        []string  `json:"repositoryNames"`
		Force                  bool      `json:"force"`
		ImageManifest          string    `json:"imageManifest"`
		ImageManifestMediaType string    `json:"imageManifestMediaType"`
		ImageTag               string    `json:"imageTag"`
		ImageTagMutability     string    `json:"imageTagMutability"`
		ImageIDs               []imageID `json:"imageIds"`
	}
	if err := decode(&in); err != nil {
		return nil, err
	}
	if err := s.registryID(in.RegistryID); err != nil {
		return nil, err
	}
	switch action {
	case "CreateRepository":
		r, err := s.Create(in.RepositoryName, in.ImageTagMutability)
		if err != nil {
			return nil, err
		}
		return map[string]any{"repository": s.repositoryJSON(r)}, nil
	case "DescribeRepositories":
		rs, err := s.Repositories(in.RepositoryNames)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(rs))
		for i, r := range rs {
			out[i] = s.repositoryJSON(r)
		}
		return map[string]any{"repositories": out}, nil
	case "DeleteRepository":
		r, err := s.Delete(in.RepositoryName, in.Force)
		if err != nil {
			return nil, err
		}
		return map[string]any{"repository": s.repositoryJSON(r)}, nil
	case "PutImage":
		id, err := s.Put(in.RepositoryName, in.ImageManifest, in.ImageManifestMediaType, in.ImageTag)
		if err != nil {
			return nil, err
		}
		return map[string]any{"image": map[string]any{"registryId": s.opts.AccountID, "repositoryName": in.RepositoryName,
			"imageId": imageID{ImageDigest: id.Digest, ImageTag: id.Tag}, "imageManifest": in.ImageManifest}}, nil
	case "DescribeImages":
		imgs, err := s.Images(in.RepositoryName, ids(in.ImageIDs))
		if err != nil {
			return nil, err
		}
		out := make([]any, len(imgs))
		for i, img := range imgs {
			d := map[string]any{"registryId": s.opts.AccountID, "repositoryName": in.RepositoryName, "imageDigest": img.Digest,
				"imageSizeInBytes": img.Size, "imagePushedAt": epoch(img.Pushed)}
			if len(img.Tags) > 0 {
				d["imageTags"] = img.Tags
			}
			if img.MediaType != "" {
				d["imageManifestMediaType"] = img.MediaType
			}
			out[i] = d
		}
		return map[string]any{"imageDetails": out}, nil
	case "BatchGetImage":
		imgs, failed, err := s.Get(in.RepositoryName, ids(in.ImageIDs))
		if err != nil {
			return nil, err
		}
		images := make([]any, len(imgs))
		for i, img := range imgs {
			id := imageID{ImageDigest: img.Digest}
			if len(img.Tags) > 0 {
				id.ImageTag = img.Tags[0]
			}
			images[i] = map[string]any{"registryId": s.opts.AccountID, "repositoryName": in.RepositoryName, "imageId": id,
				"imageManifest": img.Manifest, "imageManifestMediaType": img.MediaType}
		}
		failures := make([]any, len(failed))
		for i, f := range failed {
			failures[i] = map[string]any{"imageId": imageID{ImageDigest: f.ID.Digest, ImageTag: f.ID.Tag}, "failureCode": f.Code, "failureReason": f.Reason}
		}
		return map[string]any{"images": images, "failures": failures}, nil
	}
	return nil, &Error{Code: "InvalidAction", Status: 400, Message: fmt.Sprintf("The action %s is not valid for this endpoint (the local emulator serves CreateRepository, DescribeRepositories, DeleteRepository, PutImage, DescribeImages and BatchGetImage)", action)}
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string {
	return []string{"BatchGetImage", "CreateRepository", "DeleteRepository", "DescribeImages", "DescribeRepositories", "PutImage"}
}
