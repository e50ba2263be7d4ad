package termtext

import (
	"strings"
	"testing"
)

// TestStripControlsOfAnAnswer: an escape sequence in a server's text
// loses its ESC and BEL, and other characters stay.
func TestStripControlsOfAnAnswer(t *testing.T) {
	if got := StripControls("a\x1b]0;pwned\ab\u00e9"); strings.ContainsAny(got, "\x1b\a") || got != "a]0;pwnedb\u00e9" {
		t.Errorf("StripControls = %q", got)
	}
}
