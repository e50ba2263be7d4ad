package termtext

import (
	"fmt"
	"io"
	"strings"
)

// PrintTable prints rows of cells under header, columns padded to their
// widest cell and two spaces apart, the last column cut to one line so that
// a row fits width columns (the last column keeps at least 20). The tools,
// prompts and resources lists print with it.
func PrintTable(w io.Writer, width int, header []string, rows [][]string) {
	widths := make([]int, len(header)-1)
	for _, r := range append([][]string{header}, rows...) {
		for i := range widths {
			widths[i] = max(widths[i], len([]rune(r[i])))
		}
	}
	lead := 0
	for _, wd := range widths {
		lead += wd + 2
	}
	room := max(width-lead, 20)
	for _, r := range append([][]string{header}, rows...) {
		var b strings.Builder
		for i, wd := range widths {
			b.WriteString(r[i])
			b.WriteString(strings.Repeat(" ", wd-len([]rune(r[i]))+2))
		}
		b.WriteString(FirstLine(r[len(r)-1], room))
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
