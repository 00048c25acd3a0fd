package seal

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	var s Scrubber
	s.Add("Corr3ct-Horse", "Corr3ct-Horse-Battery", "abc", "")
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"nothing to hide", "nothing to hide"},
		{"Value 'Corr3ct-Horse-Battery' is invalid", "Value '****' is invalid"},
		{"Corr3ct-Horse and Corr3ct-Horse-Battery", "**** and ****"},
		{"abc is shorter than MinScrubbed", "abc is shorter than MinScrubbed"},
	} {
		if got := s.Scrub(c.in); got != c.want {
			t.Errorf("Scrub(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var none *Scrubber
	if got := none.Scrub("x"); got != "x" {
		t.Errorf("a nil Scrubber changed %q", got)
	}
}

func TestScrubbingHandler(t *testing.T) {
	var buf bytes.Buffer
	var s Scrubber
	log := slog.New(s.Handler(slog.NewTextHandler(&buf, nil))).With("stack", "app Hunter2-Secret")
	s.Add("Hunter2-Secret") // learnt after the logger was made
	log.WithGroup("g").Warn("failed: Hunter2-Secret", "err", errors.New("value Hunter2-Secret refused"), "n", 3, "nested", slog.GroupValue(slog.String("v", "Hunter2-Secret")))
	if out := buf.String(); strings.Contains(out, "Hunter2") || !strings.Contains(out, "failed: ****") || !strings.Contains(out, "n=3") {
		t.Errorf("logged %s", out)
	}
}
