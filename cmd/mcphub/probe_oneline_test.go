package main

import (
	"testing"
	"unicode/utf8"
)

// TestOneLineCutsAtACharacter checks that a shortened error stays valid
// UTF-8 whatever byte the limit falls on.
func TestOneLineCutsAtACharacter(t *testing.T) {
	s := "échec: ünreachable ✓ done"
	for max := 1; max < len(s); max++ {
		got := oneLine(s, max)
		if !utf8.ValidString(got) {
			t.Errorf("oneLine(%q, %d) = %q, not valid UTF-8", s, max, got)
		}
		if len(got) > max+len("…") {
			t.Errorf("oneLine(%q, %d) = %q, longer than the limit", s, max, got)
		}
	}
	if got := oneLine("a  b\n c", 80); got != "a b c" {
		t.Errorf("oneLine folds whitespace: got %q", got)
	}
}
