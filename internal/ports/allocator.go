package ports

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/customresource"
)

// ResourceType is the custom resource type the Allocator serves.
const ResourceType = "Custom::PortAllocation"

// Allocator is the customresource.Provider of Custom::PortAllocation.
//
// Properties: Pool (required), Count (contiguous ports, default 1), Preferred (first port
// to try; another free block is used when it is taken). Attributes: Port (first port) and
// Ports (comma-separated). The physical id names the allocation. An Update that changes
// neither Pool nor Count (Preferred alone, say) keeps the block and its id.
//
// An allocation belongs to the resource that created it (StackId and LogicalResourceId).
// A request naming an allocation of another owner is treated as naming one this provider
// does not hold: a Delete frees nothing and succeeds, an Update gets the requester its own
// block (a replacement), so no stack can free or take over another stack's live port.
type Allocator struct {
	store *Store
	pools Pools
	clock clock.Clock
	log   *slog.Logger
}

// NewAllocator returns an Allocator of pools kept in store.
func NewAllocator(store *Store, pools Pools, clk clock.Clock, log *slog.Logger) *Allocator {
	if clk == nil {
		clk = clock.Real
	}
	if log == nil {
		log = slog.Default()
	}
	return &Allocator{store: store, pools: pools, clock: clk, log: log}
}

type props struct {
	Pool      string
	Count     int
	Preferred int
}

func parseProps(m map[string]any) (props, error) {
	p := props{Count: 1}
	var unknown []string
	for k, v := range m {
		switch k {
		case "ServiceToken", "ServiceTimeout": // CloudFormation's own
		case "Pool":
			s, ok := v.(string)
			if !ok || s == "" {
				return props{}, fmt.Errorf("property Pool must name a pool, got %v", v)
			}
			p.Pool = s
		case "Count":
			n, err := intProp(k, v)
			if err != nil {
				return props{}, err
			}
			if n < 1 {
				return props{}, fmt.Errorf("property Count must be at least 1, got %d", n)
			}
			p.Count = n
		case "Preferred":
			n, err := intProp(k, v)
			if err != nil {
				return props{}, err
			}
			p.Preferred = n
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return props{}, fmt.Errorf("unknown properties %s: %s takes Pool, Count and Preferred", strings.Join(unknown, ", "), ResourceType)
	}
	if p.Pool == "" {
		return props{}, fmt.Errorf("property Pool is required: name the pool to allocate from")
	}
	return p, nil
}

// intProp reads an integer property; CloudFormation sends template numbers as strings.
func intProp(name string, v any) (int, error) {
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err == nil {
			return n, nil
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<31 {
			return int(x), nil
		}
	}
	return 0, fmt.Errorf("property %s must be a whole number, got %v", name, v)
}

// checkPool resolves p's pool from configuration and checks the request fits it.
func (a *Allocator) checkPool(p props) (Range, error) {
	rng, ok := a.pools[p.Pool]
	if !ok {
		return Range{}, fmt.Errorf("unknown port pool %q: the pools are %s (%s); set Pool to one of them", p.Pool, a.pools, PoolsEnv)
	}
	if p.Count > rng.Size() {
		return Range{}, fmt.Errorf("property Count %d is larger than pool %s (%s, %d ports): lower Count or use a larger pool", p.Count, p.Pool, rng, rng.Size())
	}
	if p.Preferred != 0 && (p.Preferred < rng.First || p.Preferred+p.Count-1 > rng.Last) {
		return Range{}, fmt.Errorf("property Preferred %d (Count %d) is outside pool %s (%s): choose a port in the pool or drop Preferred", p.Preferred, p.Count, p.Pool, rng)
	}
	return rng, nil
}

// Create allocates a block, or returns the one this resource already holds (a duplicate
// or replayed request).
func (a *Allocator) Create(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	p, err := parseProps(req.ResourceProperties)
	if err != nil {
		return customresource.Result{}, err
	}
	rng, err := a.checkPool(p)
	if err != nil {
		return customresource.Result{}, err
	}
	alloc, err := a.allocate(ctx, req, p, rng, func(x Allocation) bool {
		return owned(x, req) && (x.RequestID == req.RequestID || x.Count == p.Count)
	})
	if err != nil {
		return customresource.Result{}, err
	}
	return result(alloc), nil
}

// Update keeps the allocation when Pool and Count are unchanged; otherwise it allocates a
// new block under a new physical id, and CloudFormation deletes the old one once the
// stack update succeeds.
func (a *Allocator) Update(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	p, err := parseProps(req.ResourceProperties)
	if err != nil {
		return customresource.Result{}, err
	}
	old, found, err := a.find(ctx, req)
	if err != nil {
		return customresource.Result{}, err
	}
	if found && old.Pool == p.Pool && old.Count == p.Count {
		return result(old), nil
	}
	rng, err := a.checkPool(p)
	if err != nil {
		return customresource.Result{}, err
	}
	alloc, err := a.allocate(ctx, req, p, rng, func(x Allocation) bool {
		return owned(x, req) && x.RequestID == req.RequestID
	})
	if err != nil {
		return customresource.Result{}, err
	}
	a.log.Info("port allocation replaced", "old", req.PhysicalResourceID, "new", alloc.ID, "ports", alloc.PortList())
	return result(alloc), nil
}

// Delete frees the allocation. Deleting an unknown id or a failed Create's marker
// succeeds: there is nothing to free, and failing would leave the stack stuck.
func (a *Allocator) Delete(ctx context.Context, req cfn.Event) (customresource.Result, error) {
	id := req.PhysicalResourceID
	if reqID, ok := customresource.ParseFailedCreateID(id); ok {
		// A Create answered FAILED on timeout may still have stored its block afterwards.
		pool, _ := req.ResourceProperties["Pool"].(string)
		if _, known := a.pools[pool]; known {
			_, err := a.release(ctx, pool, func(x Allocation) bool { return owned(x, req) && x.RequestID == reqID })
			if err != nil {
				a.log.Warn("could not check for a block left by a failed create; find it with `cairn ports list`", "pool", pool, "err", err)
			}
		}
		return customresource.Result{PhysicalResourceID: id}, nil
	}
	pool, ok := poolOfID(id)
	if !ok {
		a.log.Info("delete of an id that is not a port allocation: nothing to free", "physical_id", id)
		return customresource.Result{PhysicalResourceID: id}, nil
	}
	freed, err := a.release(ctx, pool, func(x Allocation) bool { return x.ID == id && owned(x, req) })
	if err != nil {
		return customresource.Result{}, fmt.Errorf("free %s: %w; the ports stay allocated, retry the stack operation", id, err)
	}
	switch {
	case freed != nil:
		a.log.Info("port allocation freed", "physical_id", id, "ports", freed.PortList())
	case a.heldByOther(ctx, pool, req):
	default:
		a.log.Info("delete of an unknown port allocation: nothing to free", "physical_id", id)
	}
	return customresource.Result{PhysicalResourceID: id}, nil
}

func owned(x Allocation, req cfn.Event) bool {
	return x.StackID == req.StackID && x.LogicalResourceID == req.LogicalResourceID
}

func result(a Allocation) customresource.Result {
	return customresource.Result{
		PhysicalResourceID: a.ID,
		Data:               map[string]any{"Port": strconv.Itoa(a.First), "Ports": a.PortList()},
	}
}

// allocate returns the allocation matching existing, or stores a new block for req.
func (a *Allocator) allocate(ctx context.Context, req cfn.Event, p props, rng Range, existing func(Allocation) bool) (Allocation, error) {
	var got Allocation
	err := a.store.update(ctx, p.Pool, func(st *poolState) (bool, error) {
		if i := slices.IndexFunc(st.Allocations, func(x Allocation) bool { return existing(x) && x.RequestID == req.RequestID }); i >= 0 {
			got = st.Allocations[i]
			return false, nil
		}
		if i := slices.IndexFunc(st.Allocations, existing); i >= 0 {
			got = st.Allocations[i]
			return false, nil
		}
		first, ok := freeBlock(st.Allocations, rng, p.Count, p.Preferred)
		if !ok {
			used := 0
			for _, x := range st.Allocations {
				used += x.Count
			}
			return false, fmt.Errorf("port pool %s (%s) is exhausted: no free block of %d contiguous ports (%d of %d in use); delete stacks that no longer need theirs (see `cairn ports list %s`) or widen the pool in %s",
				p.Pool, rng, p.Count, used, rng.Size(), p.Pool, PoolsEnv)
		}
		got = Allocation{
			ID:                allocationID(p.Pool, first, p.Count, req),
			Pool:              p.Pool,
			First:             first,
			Count:             p.Count,
			StackID:           req.StackID,
			LogicalResourceID: req.LogicalResourceID,
			RequestID:         req.RequestID,
			Created:           a.clock.Now().UTC(),
		}
		st.Allocations = append(st.Allocations, got)
		return true, nil
	})
	return got, err
}

// release removes the first allocation of pool matching match and returns it (nil if none).
func (a *Allocator) release(ctx context.Context, pool string, match func(Allocation) bool) (*Allocation, error) {
	var freed *Allocation
	err := a.store.update(ctx, pool, func(st *poolState) (bool, error) {
		freed = nil
		i := slices.IndexFunc(st.Allocations, match)
		if i < 0 {
			return false, nil
		}
		x := st.Allocations[i]
		freed = &x
		st.Allocations = slices.Delete(st.Allocations, i, i+1)
		return true, nil
	})
	return freed, err
}

// heldByOther reports (and logs) whether req's physical id names an allocation of another
// resource.
func (a *Allocator) heldByOther(ctx context.Context, pool string, req cfn.Event) bool {
	allocs, err := a.store.Allocations(ctx, pool)
	if err != nil {
		return false
	}
	i := slices.IndexFunc(allocs, func(x Allocation) bool { return x.ID == req.PhysicalResourceID })
	if i < 0 || owned(allocs[i], req) {
		return false
	}
	x := allocs[i]
	a.log.Warn("delete names a port allocation of another resource: nothing freed", "physical_id", x.ID,
		"owner_stack_id", x.StackID, "owner_logical_id", x.LogicalResourceID, "ports", x.PortList())
	return true
}

// find looks up the allocation named by req's physical id, if req's resource owns it.
func (a *Allocator) find(ctx context.Context, req cfn.Event) (Allocation, bool, error) {
	id := req.PhysicalResourceID
	pool, ok := poolOfID(id)
	if !ok {
		return Allocation{}, false, nil
	}
	allocs, err := a.store.Allocations(ctx, pool)
	if err != nil {
		return Allocation{}, false, err
	}
	i := slices.IndexFunc(allocs, func(x Allocation) bool { return x.ID == id })
	if i < 0 {
		return Allocation{}, false, nil
	}
	if x := allocs[i]; !owned(x, req) {
		a.log.Warn("update names a port allocation of another resource: the requester gets its own block", "physical_id", id,
			"owner_stack_id", x.StackID, "owner_logical_id", x.LogicalResourceID, "ports", x.PortList())
		return Allocation{}, false, nil
	}
	return allocs[i], true, nil
}

// freeBlock returns the first port of a free block of count ports: preferred if it is
// free, else the lowest.
func freeBlock(allocs []Allocation, rng Range, count, preferred int) (int, bool) {
	used := make([]bool, rng.Size())
	for _, x := range allocs {
		for p := max(x.First, rng.First); p < x.First+x.Count && p <= rng.Last; p++ {
			used[p-rng.First] = true
		}
	}
	free := func(first int) bool {
		for p := first; p < first+count; p++ {
			if p < rng.First || p > rng.Last || used[p-rng.First] {
				return false
			}
		}
		return true
	}
	if preferred != 0 && free(preferred) {
		return preferred, true
	}
	run := 0
	for i, u := range used {
		if u {
			run = 0
			continue
		}
		if run++; run == count {
			return rng.First + i - count + 1, true
		}
	}
	return 0, false
}

// allocationID names a block; the hash of owner and request keeps ids unique over time
// and the same for a duplicate delivery of one request.
func allocationID(pool string, first, count int, req cfn.Event) string {
	sum := sha256.Sum256([]byte(req.StackID + "\x00" + req.LogicalResourceID + "\x00" + req.RequestID))
	ports := strconv.Itoa(first)
	if count > 1 {
		ports += "-" + strconv.Itoa(first+count-1)
	}
	return pool + ":" + ports + ":" + hex.EncodeToString(sum[:4])
}

// poolOfID returns the pool named by an allocation id.
func poolOfID(id string) (string, bool) {
	pool, rest, ok := strings.Cut(id, ":")
	return pool, ok && rest != "" && ValidPoolName(pool)
}
