package seal

import (
	"cmp"
	"context"
	"log/slog"
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

// Handler returns a log handler that writes through h what it is given with the values s
// knows when it is written scrubbed: the message, and every attribute's value as text
// (those given to With too, kept until then).
func (s *Scrubber) Handler(h slog.Handler) slog.Handler { return scrubHandler{h: h, s: s} }

type scrubHandler struct {
	h slog.Handler
	s *Scrubber
	// with are the With and WithGroup calls made, in order: a group's name, or attributes.
	with []withCall
}

type withCall struct {
	group string
	attrs []slog.Attr
}

func (sh scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return sh.h.Enabled(ctx, l) }

func (sh scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	h := sh.h
	for _, w := range sh.with {
		if w.attrs == nil {
			h = h.WithGroup(w.group)
			continue
		}
		scrubbed := make([]slog.Attr, len(w.attrs))
		for i, a := range w.attrs {
			scrubbed[i] = sh.attr(a)
		}
		h = h.WithAttrs(scrubbed)
	}
	out := slog.NewRecord(r.Time, r.Level, sh.s.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(sh.attr(a))
		return true
	})
	return h.Handle(ctx, out)
}

func (sh scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return sh
	}
	sh.with = append(slices.Clip(sh.with), withCall{attrs: slices.Clone(as)})
	return sh
}

func (sh scrubHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return sh
	}
	sh.with = append(slices.Clip(sh.with), withCall{group: name})
	return sh
}

// attr is a with its value scrubbed: a group's attributes each, any other value as its text.
func (sh scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		as := v.Group()
		scrubbed := make([]any, len(as))
		for i, g := range as {
			scrubbed[i] = sh.attr(g)
		}
		return slog.Group(a.Key, scrubbed...)
	case slog.KindString:
		return slog.String(a.Key, sh.s.Scrub(v.String()))
	case slog.KindAny:
		// Kept as it is (a list stays a list) unless its text holds a secret.
		if text := v.String(); sh.s.Scrub(text) != text {
			return slog.String(a.Key, sh.s.Scrub(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
