package report

import (
	"strings"
	"unicode"
)

// What a report shows comes in large part from its bundle and from AWS: stack and
// resource names, property names and values, reasons CloudFormation gives, branch names,
// errors quoting the config. None of it may change how the rest of the report renders:
// a newline would start a heading or end a table, <!-- would hide everything after it on
// GitHub, a backtick would swallow the text after it into code, a pipe would split a
// table cell, a right-to-left override would reorder what follows. Every such value goes
// through one of these functions on its way into a report.

// Text escapes s for inline Markdown (a paragraph, a list item, a heading, a table
// cell): line breaks become spaces, HTML's < > & become entities, and the characters
// that would open code, a link or a cell, or escape what follows (\ ` | [ ]), are
// backslash-escaped; control and bidirectional formatting characters become U+FFFD.
// What renders is s, on one line. (Emphasis is left alone: it hides nothing.)
func Text(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case lineBreak(r):
			b.WriteByte(' ')
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`|[]", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case hidden(r):
			b.WriteRune(unicode.ReplacementChar)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Cell escapes s for a cell of a Markdown table (as Text: no pipe ends it, no newline
// breaks it).
func Cell(s string) string { return Text(s) }

// Code renders s as an inline code span that holds all of it and nothing after it: a
// fence of more backticks than any run in s, line breaks as spaces, hidden characters as
// U+FFFD; in a table cell, CodeCell.
func Code(s string) string { return code(s, false) }

// CodeCell is Code for a table cell: its pipes are escaped too, which GitHub's tables
// read inside code spans.
func CodeCell(s string) string { return code(s, true) }

func code(s string, cell bool) string {
	var b strings.Builder
	run, longest := 0, 0
	for _, r := range s {
		switch {
		case lineBreak(r):
			r = ' '
		case hidden(r):
			r = unicode.ReplacementChar
		}
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
		if cell && r == '|' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	fence := strings.Repeat("`", longest+1)
	body := b.String()
	switch {
	case body == "":
		body = " "
	case strings.HasPrefix(body, "`") || strings.HasSuffix(body, "`"):
		body = " " + body + " " // one space each side is stripped when rendered
	}
	return fence + body + fence
}

// Line makes s one line of plain text (a notification, a terminal): line breaks become
// spaces and hidden characters U+FFFD, so a value cannot forge lines after it.
func Line(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case lineBreak(r):
			return ' '
		case hidden(r):
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// lineBreak reports whether r ends a line somewhere: Markdown, a terminal, an editor.
func lineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\t', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// hidden reports whether r is a control character or one that changes the direction of
// the text after it (the bidirectional embeddings, overrides and isolates).
func hidden(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	}
	return false
}
