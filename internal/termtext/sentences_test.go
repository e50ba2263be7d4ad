package termtext

import (
	"slices"
	"testing"
)

// TestSentencesAndPlural: printed warnings become one sentence each, their
// indented continuations joined and their marks gone; Plural picks the
// word for one and for many.
func TestSentencesAndPlural(t *testing.T) {
	got := Sentences("warning: X is not set;\n  set it where mcphub starts\nnote: added\n\n")
	if want := []string{"X is not set; set it where mcphub starts", "added"}; !slices.Equal(got, want) {
		t.Errorf("Sentences = %q, want %q", got, want)
	}
	if got := Sentences(""); got == nil || len(got) != 0 {
		t.Errorf("Sentences(\"\") = %#v, want an empty list for JSON", got)
	}
	if Plural(1, "is", "are") != "is" || Plural(0, "is", "are") != "are" || Plural(2, "it", "them") != "them" {
		t.Error("Plural picks the wrong word")
	}
}
