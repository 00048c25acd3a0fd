package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// screen is a small VT100 model: what a terminal of rows×cols shows after the bytes
// written to it, and the lines that scrolled off its top. It knows what cairn's live view
// and a shell's line discipline send (text, CR, LF, BS, cursor moves, erases) and ignores
// colors and modes, so a test reads the screen as a person sees it; a line longer than
// the screen is wide reads as one line, as a person copying it gets it.
type screen struct {
	mu         sync.Mutex
	rows, cols int
	grid       [][]rune
	cont       []bool // the row continues the one above (the text wrapped)
	r, c       int
	wrap       bool   // the cursor is past the last column: the next rune wraps
	scrolled   []row  // what scrolled off the top, oldest first
	pending    []byte // an escape sequence or UTF-8 rune split across writes
}

func newScreen(rows, cols int) *screen {
	s := &screen{rows: rows, cols: cols}
	for range rows {
		s.grid = append(s.grid, blank(cols))
		s.cont = append(s.cont, false)
	}
	return s
}

func blank(n int) []rune { return []rune(strings.Repeat(" ", n)) }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := append(s.pending, p...)
	s.pending = nil
	for i := 0; i < len(buf); {
		b := buf[i]
		switch {
		case b == 0x1b:
			n, ok := s.escape(buf[i:])
			if !ok {
				s.pending = append([]byte(nil), buf[i:]...)
				return len(p), nil
			}
			i += n
			continue
		case b == '\r':
			s.c, s.wrap = 0, false
		case b == '\n':
			s.lineFeed()
		case b == '\b':
			if s.c > 0 {
				s.c--
			}
			s.wrap = false
		case b < 0x20 || b == 0x7f:
			// other controls (BEL, ...) show nothing
		default:
			r, n := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && !utf8.FullRune(buf[i:]) {
				s.pending = append([]byte(nil), buf[i:]...)
				return len(p), nil
			}
			s.put(r)
			i += n
			continue
		}
		i++
	}
	return len(p), nil
}

func (s *screen) put(r rune) {
	if s.wrap {
		s.c, s.wrap = 0, false
		s.lineFeed()
		s.cont[s.r] = true
	}
	s.grid[s.r][s.c] = r
	if s.c == s.cols-1 {
		s.wrap = true
	} else {
		s.c++
	}
}

func (s *screen) lineFeed() {
	s.wrap = false
	if s.r < s.rows-1 {
		s.r++
		return
	}
	s.scrolled = append(s.scrolled, row{string(s.grid[0]), s.cont[0]})
	s.grid = append(s.grid[1:], blank(s.cols))
	s.cont = append(s.cont[1:], false)
}

// escape interprets the escape sequence at the start of b and returns its length; false
// when b holds only part of it.
func (s *screen) escape(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		return 2, true // ESC x: nothing this model shows
	}
	j := 2
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';' || b[j] == '?') {
		j++
	}
	if j == len(b) {
		return 0, false
	}
	params := strings.Split(strings.TrimPrefix(string(b[2:j]), "?"), ";")
	n := func(i, def int) int {
		if i < len(params) {
			if v, err := strconv.Atoi(params[i]); err == nil {
				return v
			}
		}
		return def
	}
	s.wrap = false
	switch b[j] {
	case 'A':
		s.r = max(0, s.r-max(1, n(0, 1)))
	case 'B':
		s.r = min(s.rows-1, s.r+max(1, n(0, 1)))
	case 'C':
		s.c = min(s.cols-1, s.c+max(1, n(0, 1)))
	case 'D':
		s.c = max(0, s.c-max(1, n(0, 1)))
	case 'G':
		s.c = min(s.cols-1, max(0, n(0, 1)-1))
	case 'H', 'f':
		s.r, s.c = min(s.rows-1, max(0, n(0, 1)-1)), min(s.cols-1, max(0, n(1, 1)-1))
	case 'K':
		switch n(0, 0) {
		case 0:
			copy(s.grid[s.r][s.c:], blank(s.cols-s.c))
		case 1:
			copy(s.grid[s.r][:s.c+1], blank(s.c+1))
		case 2:
			s.grid[s.r] = blank(s.cols)
			s.cont[s.r] = false
		}
	case 'J':
		switch n(0, 0) {
		case 0:
			copy(s.grid[s.r][s.c:], blank(s.cols-s.c))
			for r := s.r + 1; r < s.rows; r++ {
				s.grid[r], s.cont[r] = blank(s.cols), false
			}
		case 2, 3:
			for r := range s.grid {
				s.grid[r], s.cont[r] = blank(s.cols), false
			}
		}
	}
	return j + 1, true
}

// Lines is the screen as shown, each line without its trailing blanks, without the empty
// lines at the bottom.
func (s *screen) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lines(s.rowsShown())
}

// row is one row of the screen: its text, and whether it continues the row above.
type row struct {
	text string
	cont bool
}

func (s *screen) rowsShown() []row {
	var out []row
	for r, g := range s.grid {
		out = append(out, row{string(g), s.cont[r]})
	}
	return out
}

// lines reads rows as lines: a row continuing the one above joins it, and a line's
// trailing blanks are not part of it; empty lines at the end are left out.
func lines(rows []row) []string {
	var out []string
	for _, r := range rows {
		if r.cont && len(out) > 0 {
			out[len(out)-1] += r.text
			continue
		}
		out = append(out, r.text)
	}
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// Text is what scrolled off and the screen, a line each.
func (s *screen) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(lines(append(append([]row(nil), s.scrolled...), s.rowsShown()...)), "\n")
}

// TestScreenModel: the model shows what a terminal shows for the sequences the live view
// sends: lines, a footer drawn, erased by moving up and clearing, and drawn again;
// wrapping and scrolling.
func TestScreenModel(t *testing.T) {
	s := newScreen(4, 10)
	s.Write([]byte("one\r\n"))
	s.Write([]byte("\x1b[2mfoot 1\x1b[0m\r\nfoot 2\r\n"))
	s.Write([]byte("\x1b[2A\r\x1b[J"))
	s.Write([]byte("two\r\nnew foot\r\n"))
	if got := strings.Join(s.Lines(), "|"); got != "one|two|new foot" {
		t.Fatalf("screen %q, want the footer replaced", got)
	}
	s.Write([]byte("0123456789ab"))
	if got := strings.Join(s.Lines(), "|"); got != "two|new foot|0123456789ab" {
		t.Fatalf("screen %q, want a wrapped line, read whole, and the first line scrolled off", got)
	}
	if s.Text() != "one\ntwo\nnew foot\n0123456789ab" {
		t.Fatalf("text %q", s.Text())
	}
	s.Write([]byte("\xe2\x80"))
	s.Write([]byte("\xa6\x1b["))
	s.Write([]byte("1Gx\x1b[K"))
	if got := s.Lines()[2]; got != "0123456789x" {
		t.Fatalf("last line %q, want the split rune overwritten and the line erased after x", got)
	}
}
