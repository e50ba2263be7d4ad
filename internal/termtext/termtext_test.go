package termtext

import (
	"strings"
	"testing"
)

func TestStripControlsOfAnAnswer(t *testing.T) {
	if got := StripControls("a\x1b]0;pwned\ab\u00e9"); strings.ContainsAny(got, "\x1b\a") || got != "a]0;pwnedb\u00e9" {
		t.Errorf("StripControls = %q", got)
	}
}

func TestOneLineCutsAtACharacter(t *testing.T) {
	if got := OneLine("a  b\n\tc", 10); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
	if got := OneLine("ééé", 3); got != "é…" {
		t.Errorf("OneLine cut = %q, want é…", got)
	}
}
