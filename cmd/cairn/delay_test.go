package main

import (
	"strings"
	"testing"
)

// TestLocalUpDelayFlags parses `cairn local up`'s delay flags as a user types them: one
// duration, or a range each operation's delay is drawn from; a malformed or inverted
// range is refused with what to type instead.
func TestLocalUpDelayFlags(t *testing.T) {
	for _, c := range []struct{ flag, value, want, err string }{
		{"change-set-delay", "", "1s", ""},
		{"change-set-delay", "1.5s", "1.5s", ""},
		{"change-set-delay", "2s..12s", "2s..12s", ""},
		{"resource-delay", "5s..2m0s", "5s..2m0s", ""},
		{"change-set-delay", "3s..3s", "3s", ""},
		{"change-set-delay", "12s..2s", "", "MAX of MIN..MAX is not a duration at least MIN"},
		{"change-set-delay", "2..12", "", "not a duration or a range MIN..MAX"},
		{"resource-delay", "-1s", "", "not a duration"},
	} {
		cmd := newLocalUpCmd()
		var args []string
		if c.value != "" {
			args = []string{"--" + c.flag, c.value}
		}
		err := cmd.ParseFlags(args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--%s %s: error %v, want one saying %q", c.flag, c.value, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("--%s %s: %v", c.flag, c.value, err)
			continue
		}
		if got := cmd.Flags().Lookup(c.flag).Value.String(); got != c.want {
			t.Errorf("--%s %q: value %s, want %s", c.flag, c.value, got, c.want)
		}
	}
}
