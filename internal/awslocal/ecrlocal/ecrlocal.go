// Package ecrlocal emulates the part of Amazon ECR (AWS JSON 1.1, the protocol the SDKs and
// the AWS CLI speak) that deploying a CDK app needs: repositories (CreateRepository,
// DescribeRepositories, DeleteRepository) and image manifests (PutImage, DescribeImages,
// BatchGetImage), so that cairn's check that a Docker image asset is published before its
// stack deploys runs against it as against AWS. Layers and the Docker registry API are not
// served: an image is its manifest, pushed with PutImage (`aws ecr put-image`). It is a test
// double of AWS, never a production path.
package ecrlocal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	Clock             clock.Clock
	// Dir persists repositories and images in Dir/ecr.json; "" keeps them in memory.
	Dir    string
	Logger *slog.Logger
}

// Service is one account's registry in one region.
type Service struct {
	opts Options
	// state is where the service keeps its state under --dir.
	state statefile.File

	mu    sync.Mutex
	repos map[string]*repository
}

type repository struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Immutable tags (IMMUTABLE) cannot move to another image.
	Immutable bool     `json:"immutable,omitempty"`
	Images    []*image `json:"images,omitempty"`
}

type image struct {
	Digest    string    `json:"digest"`
	Tags      []string  `json:"tags,omitempty"`
	Manifest  string    `json:"manifest"`
	MediaType string    `json:"mediaType,omitempty"`
	Pushed    time.Time `json:"pushed"`
}

// Error is an ECR API error.
type Error struct {
	Code, Message string
	Status        int
}

func (e *Error) Error() string { return "ecr " + e.Code + ": " + e.Message }

// JSONFault is the error as the protocol answers it (awsjson.Fault).
func (e *Error) JSONFault() (code, message string, status int) { return e.Code, e.Message, e.Status }

// New returns a Service, loading Dir's state when there is some.
func New(o Options) (*Service, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: o, repos: map[string]*repository{}}
	s.state = statefile.File{Dir: o.Dir, Name: "ecr.json", Service: "ecr emulator", Perm: 0o644, Logger: o.Logger}
	if err := s.state.Load(&s.repos); err != nil {
		return nil, err
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Save(s.repos)
}

// nameRE is ECR's repository name pattern.
var nameRE = regexp.MustCompile(`^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// tagRE is the characters ECR allows in an image tag.
var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}$`)

func (s *Service) notFound(name string) *Error {
	return &Error{Code: "RepositoryNotFoundException", Status: 400,
		Message: fmt.Sprintf("The repository with name '%s' does not exist in the registry with id '%s'", name, s.opts.AccountID)}
}

// Repository is a repository as DescribeRepositories shows it.
type Repository struct {
	Name, ARN, URI, RegistryID string
	Created                    time.Time
	// Mutability is MUTABLE or IMMUTABLE.
	Mutability string
}

func (s *Service) describe(r *repository) Repository {
	mutability := "MUTABLE"
	if r.Immutable {
		mutability = "IMMUTABLE"
	}
	return Repository{Name: r.Name, RegistryID: s.opts.AccountID, Created: r.Created, Mutability: mutability,
		ARN: fmt.Sprintf("arn:aws:ecr:%s:%s:repository/%s", s.opts.Region, s.opts.AccountID, r.Name),
		URI: fmt.Sprintf("%s.dkr.ecr.%s.amazonaws.com/%s", s.opts.AccountID, s.opts.Region, r.Name)}
}

// Create is CreateRepository; mutability is MUTABLE (or "") or IMMUTABLE.
func (s *Service) Create(name, mutability string) (Repository, error) {
	if mutability != "" && mutability != "MUTABLE" && mutability != "IMMUTABLE" {
		return Repository{}, &Error{Code: "InvalidParameterException", Status: 400,
			Message: fmt.Sprintf("Invalid parameter at 'imageTagMutability' failed to satisfy constraint: 'Member must satisfy enum value set: [MUTABLE, IMMUTABLE]' (got %s)", mutability)}
	}
	if len(name) < 2 || len(name) > 256 || !nameRE.MatchString(name) {
		return Repository{}, &Error{Code: "InvalidParameterException", Status: 400,
			Message: fmt.Sprintf("Invalid parameter at 'repositoryName' failed to satisfy constraint: 'must satisfy regular expression '%s''", nameRE)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.repos[name]; ok {
		return Repository{}, &Error{Code: "RepositoryAlreadyExistsException", Status: 400,
			Message: fmt.Sprintf("The repository with name '%s' already exists in the registry with id '%s'", name, s.opts.AccountID)}
	}
	r := &repository{Name: name, Created: s.opts.Clock.Now().UTC(), Immutable: mutability == "IMMUTABLE"}
	s.repos[name] = r
	s.state.Persist(s.repos)
	return s.describe(r), nil
}

// Repositories is DescribeRepositories: the named repositories, or every one.
func (s *Service) Repositories(names []string) ([]Repository, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(names) == 0 {
		for n := range s.repos {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	out := make([]Repository, 0, len(names))
	for _, n := range names {
		r, ok := s.repos[n]
		if !ok {
			return nil, s.notFound(n)
		}
		out = append(out, s.describe(r))
	}
	return out, nil
}

// Delete is DeleteRepository: a repository holding images only with force.
func (s *Service) Delete(name string, force bool) (Repository, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[name]
	if !ok {
		return Repository{}, s.notFound(name)
	}
	if len(r.Images) > 0 && !force {
		return Repository{}, &Error{Code: "RepositoryNotEmptyException", Status: 400,
			Message: fmt.Sprintf("The repository with name '%s' in registry with id '%s' cannot be deleted because it still contains images", name, s.opts.AccountID)}
	}
	delete(s.repos, name)
	s.state.Persist(s.repos)
	return s.describe(r), nil
}

// ImageID names an image by digest, tag, or both.
type ImageID struct {
	Digest, Tag string
}

func (id ImageID) String() string {
	q := func(v string) string {
		if v == "" {
			return "'null'"
		}
		return "'" + v + "'"
	}
	return "{imageDigest:" + q(id.Digest) + ", imageTag:" + q(id.Tag) + "}"
}

// Image is an image as DescribeImages and BatchGetImage show it.
type Image struct {
	Digest    string
	Tags      []string
	Manifest  string
	MediaType string
	Size      int64
	Pushed    time.Time
}

// Put is PutImage: it stores manifest under tag (or untagged), its digest the sha256 of
// the manifest. A tag moves to the new image in a mutable repository and is refused in an
// immutable one (ImageTagAlreadyExistsException); the same manifest with the same tag
// again is ImageAlreadyExistsException.
func (s *Service) Put(name, manifest, mediaType, tag string) (ImageID, error) {
	if manifest == "" {
		return ImageID{}, &Error{Code: "InvalidParameterException", Status: 400, Message: "Invalid parameter at 'imageManifest' failed to satisfy constraint: 'Member must not be null'"}
	}
	if tag != "" && !tagRE.MatchString(tag) {
		return ImageID{}, &Error{Code: "InvalidParameterException", Status: 400, Message: fmt.Sprintf("Invalid parameter at 'imageTag' failed to satisfy constraint: 'must satisfy regular expression '%s''", tagRE)}
	}
	sum := sha256.Sum256([]byte(manifest))
	id := ImageID{Digest: "sha256:" + hex.EncodeToString(sum[:]), Tag: tag}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[name]
	if !ok {
		return ImageID{}, s.notFound(name)
	}
	var img *image
	for _, i := range r.Images {
		if i.Digest == id.Digest {
			img = i
		}
	}
	if img != nil && (tag == "" || slices.Contains(img.Tags, tag)) {
		return ImageID{}, &Error{Code: "ImageAlreadyExistsException", Status: 400,
			Message: fmt.Sprintf("Image with digest '%s' and tag '%s' already exists in the repository with name '%s' in registry with id '%s'", id.Digest, tag, name, s.opts.AccountID)}
	}
	if tag != "" {
		for _, i := range r.Images {
			if r.Immutable && i != img && slices.Contains(i.Tags, tag) {
				return ImageID{}, &Error{Code: "ImageTagAlreadyExistsException", Status: 400,
					Message: fmt.Sprintf("The image tag '%s' already exists in the '%s' repository and cannot be overwritten because the repository is immutable.", tag, name)}
			}
		}
		for _, i := range r.Images {
			i.Tags = slices.DeleteFunc(i.Tags, func(t string) bool { return t == tag })
		}
	}
	if img == nil {
		img = &image{Digest: id.Digest, Manifest: manifest, MediaType: mediaType, Pushed: s.opts.Clock.Now().UTC()}
		r.Images = append(r.Images, img)
	}
	if tag != "" {
		img.Tags = append(img.Tags, tag)
	}
	s.state.Persist(s.repos)
	return id, nil
}

// find returns the image id names in r, or nil.
func find(r *repository, id ImageID) *image {
	for _, i := range r.Images {
		if (id.Digest == "" || i.Digest == id.Digest) && (id.Tag == "" || slices.Contains(i.Tags, id.Tag)) {
			return i
		}
	}
	return nil
}

func view(i *image) Image {
	return Image{Digest: i.Digest, Tags: slices.Clone(i.Tags), Manifest: i.Manifest, MediaType: i.MediaType, Size: int64(len(i.Manifest)), Pushed: i.Pushed}
}

// Images is DescribeImages: the named images (every one when ids is empty); an id that
// names no image is ImageNotFoundException, as in ECR.
func (s *Service) Images(name string, ids []ImageID) ([]Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[name]
	if !ok {
		return nil, s.notFound(name)
	}
	if len(ids) == 0 {
		out := make([]Image, 0, len(r.Images))
		for _, i := range r.Images {
			out = append(out, view(i))
		}
		return out, nil
	}
	var out []Image
	for _, id := range ids {
		i := find(r, id)
		if i == nil {
			return nil, &Error{Code: "ImageNotFoundException", Status: 400,
				Message: fmt.Sprintf("The image with imageId %s does not exist within the repository with name '%s' in the registry with id '%s'", id, name, s.opts.AccountID)}
		}
		out = append(out, view(i))
	}
	return out, nil
}

// Failure is an image BatchGetImage could not return.
type Failure struct {
	ID           ImageID
	Code, Reason string
}

// Get is BatchGetImage: the named images, and a failure for each id naming none.
func (s *Service) Get(name string, ids []ImageID) ([]Image, []Failure, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[name]
	if !ok {
		return nil, nil, s.notFound(name)
	}
	var found []Image
	var failed []Failure
	for _, id := range ids {
		if i := find(r, id); i != nil {
			found = append(found, view(i))
			continue
		}
		failed = append(failed, Failure{ID: id, Code: "ImageNotFound", Reason: "Requested image not found"})
	}
	return found, failed, nil
}

// registryID is the account a request names, which must be this registry's.
func (s *Service) registryID(id string) error {
	if id != "" && id != s.opts.AccountID {
		return &Error{Code: "InvalidParameterException", Status: 400,
			Message: fmt.Sprintf("Invalid parameter at 'registryId': the local emulator serves the registry of account %s here, not %s (sign the request with that account's credentials)", s.opts.AccountID, strings.TrimSpace(id))}
	}
	return nil
}
