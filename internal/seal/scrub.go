package seal

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Mask is what a scrubbed secret reads as, as CloudFormation shows a NoEcho value.
const Mask = "****"

// MinScrubbed is the shortest value a Scrubber replaces: a shorter one (a NoEcho "1", say)
// would mask every occurrence of its letters in every text, and is no secret.
const MinScrubbed = 4

// Scrubber replaces the known secret values of a run in any text cairn stores, prints,
// logs or publishes: CloudFormation quotes values in failure reasons, and a value it quotes
// may be one cairn keeps sealed. It holds the values in memory only, for the turn that
// read them; the zero Scrubber knows none. It is safe for concurrent use.
type Scrubber struct {
	mu       sync.Mutex
	values   []string
	replacer *strings.Replacer
}

// Add makes s replace values from now on.
func (s *Scrubber) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) >= MinScrubbed && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
			s.replacer = nil
		}
	}
}

// Scrub returns text with every value s knows replaced by Mask, the longest first (so a
// secret holding another is masked whole).
func (s *Scrubber) Scrub(text string) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.Lock()
	if s.replacer == nil && len(s.values) > 0 {
		slices.SortFunc(s.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
		pairs := make([]string, 0, 2*len(s.values))
		for _, v := range s.values {
			pairs = append(pairs, v, Mask)
		}
		s.replacer = strings.NewReplacer(pairs...)
	}
	r := s.replacer
	s.mu.Unlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
}
