// Package termtext makes text that mcphub did not write (a server's error,
// an authorization server's answer in a browser redirect) safe to print
// on one terminal line: no control characters a terminal would act on,
// no line breaks, a bounded length. The CLI and the OAuth sign-in share
// it; it imports only the standard library.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// StripControls is s without the C0 and C1 control characters a terminal
// would act on (ESC, BEL, CSI ...); tabs and line breaks become spaces.
// Bytes that are not UTF-8 become U+FFFD.
func StripControls(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t', r == '\n', r == '\v', r == '\f', r == '\r':
			return ' '
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return -1
		}
		return r
	}, s)
}

// OneLine is s with its runs of white space made single spaces, cut to at
// most max bytes (at a character boundary, never inside a UTF-8 sequence)
// with "…" marking the cut.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
