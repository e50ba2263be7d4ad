package main

import (
	"testing"
	"unicode/utf8"

	"github.com/mcphub/mcphub/internal/termtext"
)

// TestOneLineCutsAtACharacter checks that a shortened error stays valid
// UTF-8 whatever byte the limit falls on.
func TestOneLineCutsAtACharacter(t *testing.T) {
	s := "échec: ünreachable ✓ done"
	for max := 1; max < len(s); max++ {
		got := termtext.OneLine(s, max)
		if !utf8.ValidString(got) {
			t.Errorf("termtext.OneLine(%q, %d) = %q, not valid UTF-8", s, max, got)
		}
		if len(got) > max+len("…") {
			t.Errorf("termtext.OneLine(%q, %d) = %q, longer than the limit", s, max, got)
		}
	}
	if got := termtext.OneLine("a  b\n c", 80); got != "a b c" {
		t.Errorf("oneLine folds whitespace: got %q", got)
	}
}
