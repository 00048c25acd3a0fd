// Package ports allocates TCP ports to CloudFormation stacks through the
// Custom::PortAllocation custom resource.
//
// Allocations live in cairn's bucket, one object per pool (ports/POOL.json), and every
// change is a conditional write on the object's ETag, retried with jitter on conflict, so
// two concurrent requests never get the same port. Each allocation records its owner
// (StackId, LogicalResourceId) and the request that made it, so a duplicate or replayed
// request returns the allocation it already made instead of leaking another.
package ports

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PoolsEnv names the environment variable holding the pools, e.g.
// "default=20000-29999,web=8000-8099".
const PoolsEnv = "CAIRN_PORT_POOLS"

// DefaultPools is used when PoolsEnv is unset.
const DefaultPools = "default=20000-29999"

// Range is an inclusive range of ports.
type Range struct{ First, Last int }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Size is the number of ports in r.
func (r Range) Size() int { return r.Last - r.First + 1 }

// Pools maps pool names to their ranges.
type Pools map[string]Range

// Names returns the pool names, sorted.
func (p Pools) Names() []string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (p Pools) String() string {
	var parts []string
	for _, n := range p.Names() {
		parts = append(parts, n+"="+p[n].String())
	}
	return strings.Join(parts, ",")
}

var poolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidPoolName reports whether name can name a pool (and an object key under ports/).
func ValidPoolName(name string) bool { return poolName.MatchString(name) }

// ParsePools parses "NAME=FIRST-LAST,..." and rejects overlapping ranges, which would let
// two pools hand out the same port.
func ParsePools(s string) (Pools, error) {
	pools := Pools{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rng, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok || !ValidPoolName(name) {
			return nil, fmt.Errorf("port pool %q: want NAME=FIRST-LAST with NAME of letters, digits, '.', '_' or '-' (e.g. default=20000-29999)", item)
		}
		first, last, ok := strings.Cut(strings.TrimSpace(rng), "-")
		a, errA := strconv.Atoi(strings.TrimSpace(first))
		b, errB := strconv.Atoi(strings.TrimSpace(last))
		if !ok || errA != nil || errB != nil || a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("port pool %s: range %q must be FIRST-LAST with 1 <= FIRST <= LAST <= 65535", name, rng)
		}
		if _, dup := pools[name]; dup {
			return nil, fmt.Errorf("port pool %s is defined twice", name)
		}
		pools[name] = Range{a, b}
	}
	if len(pools) == 0 {
		return nil, fmt.Errorf("no port pools in %q: define at least one, e.g. %s", s, DefaultPools)
	}
	names := pools.Names()
	for i, x := range names {
		for _, y := range names[i+1:] {
			if pools[x].First <= pools[y].Last && pools[y].First <= pools[x].Last {
				return nil, fmt.Errorf("port pools %s (%s) and %s (%s) overlap: the same port could be given twice; make them disjoint",
					x, pools[x], y, pools[y])
			}
		}
	}
	return pools, nil
}

// PoolsFromEnv parses PoolsEnv, or DefaultPools when it is unset.
func PoolsFromEnv() (Pools, error) {
	s := os.Getenv(PoolsEnv)
	if strings.TrimSpace(s) == "" {
		s = DefaultPools
	}
	p, err := ParsePools(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PoolsEnv, err)
	}
	return p, nil
}
