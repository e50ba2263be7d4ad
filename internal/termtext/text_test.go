package termtext

import (
	"testing"
	"unicode/utf8"
)

// TestOneLineCutsAtACharacter checks that a shortened error stays valid
// UTF-8 whatever byte the limit falls on.
func TestOneLineCutsAtACharacter(t *testing.T) {
	s := "échec: ünreachable ✓ done"
	for max := 1; max < len(s); max++ {
		got := OneLine(s, max)
		if !utf8.ValidString(got) {
			t.Errorf("OneLine(%q, %d) = %q, not valid UTF-8", s, max, got)
		}
		if len(got) > max+len("…") {
			t.Errorf("OneLine(%q, %d) = %q, longer than the limit", s, max, got)
		}
	}
	if got := OneLine("a  b\n c", 80); got != "a b c" {
		t.Errorf("OneLine folds whitespace: got %q", got)
	}
}

// TestWidthCountsColumns: a wide character takes two columns, and a cut
// line fits the columns it is cut to, ending in "…".
func TestWidthCountsColumns(t *testing.T) {
	if RuneColumns('a') != 1 || RuneColumns('進') != 2 || RuneColumns('😀') != 2 {
		t.Errorf("columns of a, 進, 😀 = %d, %d, %d; want 1, 2, 2", RuneColumns('a'), RuneColumns('進'), RuneColumns('😀'))
	}
	if got := CutToWidth("進捗進捗", 8); got != "進捗進捗" {
		t.Errorf("CutToWidth of a line that fits = %q", got)
	}
	if got := CutToWidth("進捗進捗", 6); got != "進捗…" {
		t.Errorf("CutToWidth(進捗進捗, 6) = %q, want 進捗…", got)
	}
}

// TestProgressAndCounts: a progress line has the count, the share of the
// total, and the message on one line without control characters; a count
// takes its noun's plural but for one.
func TestProgressAndCounts(t *testing.T) {
	if got, want := Progress(1, 4, "reading\nfiles\x1b[31m"), "progress 1/4 (25%) reading files[31m"; got != want {
		t.Errorf("Progress = %q, want %q", got, want)
	}
	if got, want := Progress(2.5, 0, ""), "progress 2.50"; got != want {
		t.Errorf("Progress = %q, want %q", got, want)
	}
	if HowMany(1, "tool") != "1 tool" || HowMany(0, "tool") != "0 tools" {
		t.Errorf("HowMany: %q, %q", HowMany(1, "tool"), HowMany(0, "tool"))
	}
	if got := FirstLine("\n  first   line \nsecond", 80); got != "first line" {
		t.Errorf("FirstLine = %q", got)
	}
}
