package termtext

import "strings"

// Sentences splits warnings and notes as a command printed them into one
// sentence each, for a --json answer that repeats them: a line that
// starts with a space continues the one above, and the "warning: " and
// "note: " marks go.
func Sentences(text string) []string {
	out := []string{}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, " ") && len(out) > 0:
			out[len(out)-1] += " " + strings.TrimSpace(line)
		default:
			line = strings.TrimPrefix(line, "warning: ")
			out = append(out, strings.TrimPrefix(line, "note: "))
		}
	}
	return out
}
