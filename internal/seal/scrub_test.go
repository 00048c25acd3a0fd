package seal

import "testing"

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
