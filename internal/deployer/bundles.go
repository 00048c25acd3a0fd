package deployer

import (
	"context"
	"slices"
	"sync"

	"github.com/cairn-dev/cairn/internal/rundoc"
)

// keepBundles is how many loaded bundles a warm deployer keeps: the few runs in flight at
// once, not every bundle it ever saw.
const keepBundles = 4

// bundles keeps the bundles a warm deployer loaded, by deployment and content (sha256), so
// a run's steps load nothing its start or an earlier step loaded: a step that creates or
// executes change sets needs its stacks' templates and options again, and a download with
// config.Load and every template check costs more than the rest of the step. A cold
// process loads the bundle once, at the first step that needs it.
type bundles struct {
	mu     sync.Mutex
	loaded map[string]*rundoc.Loaded
	used   []string // keys, least recently used first
}

func bundleKey(deployment, sha string) string { return deployment + "\x00" + sha }

// get returns the loaded bundle of deployment with content sha, or nil.
func (c *bundles) get(deployment, sha string) *rundoc.Loaded {
	if sha == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := bundleKey(deployment, sha)
	lb := c.loaded[k]
	if lb != nil {
		c.touch(k)
	}
	return lb
}

// put keeps a bundle that loaded, forgetting the least recently used beyond keepBundles.
func (c *bundles) put(deployment string, lb *rundoc.Loaded) {
	if lb == nil || lb.Config == nil || lb.Bundle.SHA256 == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded == nil {
		c.loaded = map[string]*rundoc.Loaded{}
	}
	k := bundleKey(deployment, lb.Bundle.SHA256)
	c.loaded[k] = lb
	c.touch(k)
	for len(c.used) > keepBundles {
		delete(c.loaded, c.used[0])
		c.used = c.used[1:]
	}
}

func (c *bundles) touch(k string) {
	c.used = append(slices.DeleteFunc(c.used, func(u string) bool { return u == k }), k)
}

// bundle is the bundle doc's run deploys, loaded: kept from an earlier load of the same
// content, else downloaded at the run's version (rundoc.Download) and kept when it is still
// the run's content.
func (b *base) bundle(ctx context.Context, doc *rundoc.Document) (*rundoc.Loaded, error) {
	if lb := b.bundles.get(doc.Run.Deployment, doc.Bundle.SHA256); lb != nil {
		return lb, nil
	}
	lb, err := rundoc.Download(ctx, b.s3, doc.Bundle, b.loadOptions(doc.Run.Deployment))
	if err == nil && (doc.Bundle.SHA256 == "" || lb.Bundle.SHA256 == doc.Bundle.SHA256) {
		b.bundles.put(doc.Run.Deployment, lb)
	}
	return lb, err
}
