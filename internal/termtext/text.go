package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// OneLine is s on one line, its runs of white space folded into one space,
// cut to at most max bytes (the cut ends in "…", never inside a UTF-8
// sequence). Messages quote an error or a description with it, so that a
// server's long text cannot take over a table or a sentence.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	// Cut at a character boundary, never inside a UTF-8 sequence.
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FirstLine is the first non-empty line of s, its spaces collapsed, cut to
// at most width runes (the cut ends in "…"): what a table shows of a
// description.
func FirstLine(s string, width int) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			if len([]rune(line)) <= width {
				return line
			}
			return string([]rune(line)[:width-1]) + "…"
		}
	}
	return ""
}

// HowMany is a count with its noun, "1 tool", "2 tools": the noun takes an
// s for any count but one.
func HowMany(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// StripControls is s without the C0 and C1 control characters a terminal
// would act on (ESC, BEL, CSI ...); tabs and line breaks become spaces.
// Bytes that are not UTF-8 become U+FFFD. Text a server or an
// authorization server sent goes through it before a terminal shows it.
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

// Progress is one progress notification as a single line shows it:
// "progress 3/10 (30%) message", without a control character the server
// may have put in its message.
func Progress(progress, total float64, message string) string {
	var b strings.Builder
	b.WriteString("progress ")
	b.WriteString(formatNumber(progress))
	if total > 0 {
		fmt.Fprintf(&b, "/%s (%d%%)", formatNumber(total), int(100*progress/total))
	}
	if m := strings.Join(strings.Fields(StripControls(message)), " "); m != "" {
		b.WriteString(" " + m)
	}
	return b.String()
}

// formatNumber is f as a whole number when it is one, else with two
// decimals.
func formatNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.2f", f)
}
