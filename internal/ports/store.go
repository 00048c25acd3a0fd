package ports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/objects"
)

// S3API is the part of the S3 client the store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Allocation is a contiguous block of ports held by one custom resource.
type Allocation struct {
	// ID is the resource's PhysicalResourceId: POOL:PORTS:HASH, where HASH digests the
	// owner and the request, so an id is never reused for another owner.
	ID                string    `json:"id"`
	Pool              string    `json:"pool"`
	First             int       `json:"first"`
	Count             int       `json:"count"`
	StackID           string    `json:"stackId"`
	LogicalResourceID string    `json:"logicalResourceId"`
	RequestID         string    `json:"requestId"`
	Created           time.Time `json:"created"`
}

// Ports lists the allocated ports.
func (a Allocation) Ports() []int {
	ps := make([]int, a.Count)
	for i := range ps {
		ps[i] = a.First + i
	}
	return ps
}

// PortList is Ports as "p1,p2,...", the resource's Ports attribute.
func (a Allocation) PortList() string {
	s := make([]string, a.Count)
	for i, p := range a.Ports() {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// StackName is the stack's name taken from its StackId ARN.
func (a Allocation) StackName() string { return awsclient.StackName(a.StackID) }

// poolState is the document stored at ports/POOL.json.
type poolState struct {
	Schema      int          `json:"schema"`
	Pool        string       `json:"pool"`
	Allocations []Allocation `json:"allocations"`
}

const (
	schemaVersion = 1
	// maxBackoff caps the jittered wait after a conflict: long enough to spread a burst
	// of writers, short enough to keep the tail latency of a busy pool low.
	maxBackoff = 250 * time.Millisecond
)

// Store reads and conditionally writes pool documents in a bucket.
type Store struct {
	client S3API
	bucket string
	clock  clock.Clock
	// attempts bounds the read-modify-write rounds of one change under contention.
	attempts int
	backoff  time.Duration // cap of the first jittered wait, doubled per conflict
	// queues hold this process's changes waiting for their pool (records of one SQS batch
	// run concurrently): the changes that arrive while a write is under way are made
	// together in the next one, so conditional writes only arbitrate between processes
	// and a burst of requests costs a write per batch, not per request.
	queues sync.Map // pool name -> *queue
}

// queue is a pool's changes waiting to be written, and whether a writer is at work.
type queue struct {
	mu      sync.Mutex
	waiting []*change
	busy    bool
}

// change is one request's change of a pool document and where its result goes.
type change struct {
	apply func(*poolState) (bool, error)
	done  chan error
}

// NewStore returns a Store of the pools in bucket; clk paces conflict retries.
func NewStore(client S3API, bucket string, clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.Real
	}
	return &Store{client: client, bucket: bucket, clock: clk, attempts: 60, backoff: 4 * time.Millisecond}
}

func (s *Store) where(pool string) string { return bucket.URI(s.bucket, bucket.PoolKey(pool)) }

// Allocations returns pool's allocations in port order; none if the pool has no document.
func (s *Store) Allocations(ctx context.Context, pool string) ([]Allocation, error) {
	st, _, err := s.load(ctx, pool)
	return st.Allocations, err
}

// Pools lists the pools that have a document in the bucket.
func (s *Store) Pools(ctx context.Context) ([]string, error) {
	keys, err := objects.List(ctx, s.client, s.bucket, bucket.PortsPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, s.hint(err))
	}
	var names []string
	for _, k := range keys {
		if name, ok := bucket.PoolOf(k); ok && ValidPoolName(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// load returns pool's document and its ETag ("" when there is none yet).
func (s *Store) load(ctx context.Context, pool string) (poolState, string, error) {
	empty := poolState{Schema: schemaVersion, Pool: pool}
	o, err := objects.Get(ctx, s.client, s.bucket, bucket.PoolKey(pool), "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return empty, "", nil
	}
	if err != nil {
		return poolState{}, "", fmt.Errorf("%w%s", err, s.hint(err))
	}
	var st poolState
	if err := json.Unmarshal(o.Body, &st); err != nil {
		return poolState{}, "", fmt.Errorf("%s is not a port pool document (%v): restore a previous version of it (the bucket is versioned)", s.where(pool), err)
	}
	if st.Schema != schemaVersion {
		return poolState{}, "", fmt.Errorf("%s has schema %d, this cairn reads %d: upgrade cairn", s.where(pool), st.Schema, schemaVersion)
	}
	return st, o.ETag, nil
}

// update applies change to pool's document and writes it back only if nobody wrote it in
// between (If-Match its ETag, or If-None-Match * when it does not exist yet). The changes
// of this process that arrive while a write of the pool is under way are applied together,
// in order, and written at once (a change that fails leaves the document as it found it
// and fails alone). On a conflict the writer waits a jittered, growing delay and starts
// over from a fresh read, so change must derive everything from the state it is given.
// change reports whether it changed anything; an error from it aborts it without writing.
func (s *Store) update(ctx context.Context, pool string, apply func(*poolState) (bool, error)) error {
	v, _ := s.queues.LoadOrStore(pool, &queue{})
	q := v.(*queue)
	c := &change{apply: apply, done: make(chan error, 1)}
	q.mu.Lock()
	q.waiting = append(q.waiting, c)
	if q.busy {
		q.mu.Unlock()
		select {
		case err := <-c.done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("write %s: %w while waiting for this process's other writers", s.where(pool), ctx.Err())
		}
	}
	q.busy = true
	q.mu.Unlock()
	// This request writes: its batch, then each batch that gathered meanwhile.
	for {
		q.mu.Lock()
		batch := q.waiting
		q.waiting = nil
		if len(batch) == 0 {
			q.busy = false
			q.mu.Unlock()
			break
		}
		q.mu.Unlock()
		s.write(ctx, pool, batch)
	}
	return <-c.done
}

// write applies batch's changes to pool's document and writes it once, retrying on
// conflict; each change's result goes to its done.
func (s *Store) write(ctx context.Context, pool string, batch []*change) {
	errs := make([]error, len(batch))
	defer func() {
		for i, c := range batch {
			c.done <- errs[i]
		}
	}()
	fail := func(err error) {
		for i := range errs {
			errs[i] = err
		}
	}
	wait := s.backoff
	for attempt := 1; ; attempt++ {
		st, etag, err := s.load(ctx, pool)
		if err != nil {
			fail(err)
			return
		}
		changed := false
		for i, c := range batch {
			kept := slices.Clone(st.Allocations)
			ok, err := c.apply(&st)
			errs[i] = err
			if err != nil {
				st.Allocations = kept // a failed change leaves the document as it was
				continue
			}
			changed = changed || ok
		}
		if !changed {
			return
		}
		sort.Slice(st.Allocations, func(i, j int) bool { return st.Allocations[i].First < st.Allocations[j].First })
		_, err = objects.WriteJSON(ctx, s.client, s.bucket, bucket.PoolKey(pool), st, objects.Write{Create: etag == "", IfMatch: etag})
		if err == nil {
			return
		}
		if !errors.Is(err, objects.ErrConflict) {
			fail(err)
			return
		}
		if attempt >= s.attempts {
			fail(fmt.Errorf("write %s: still conflicting with concurrent writers after %d attempts: retry the stack operation", s.where(pool), attempt))
			return
		}
		select {
		case <-s.clock.After(rand.N(wait) + time.Millisecond):
		case <-ctx.Done():
			fail(fmt.Errorf("write %s: %w while retrying a conflicting write", s.where(pool), ctx.Err()))
			return
		}
		wait = min(2*wait, maxBackoff)
	}
}

// hint says what to do about errors a user can fix.
func (s *Store) hint(err error) string {
	switch awserr.ErrorCode(err) {
	case "NoSuchBucket":
		return fmt.Sprintf(": bucket %s does not exist; check the bucket name (%s, --bucket)", s.bucket, BucketEnv)
	case "AccessDenied", "Forbidden":
		return fmt.Sprintf(": grant s3:GetObject, s3:PutObject and s3:ListBucket on %s/%s*", s.bucket, bucket.PortsPrefix)
	}
	return ""
}
