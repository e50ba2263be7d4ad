package termtext_test

import (
	"os"

	"github.com/mcphub/mcphub/internal/termtext"
)

// A list prints as a table whose last column is cut to one line that fits
// the width, with a count line under it.
func ExamplePrintTable() {
	rows := [][]string{
		{"github__create_issue", "Create an issue.\nThe body may use Markdown."},
		{"fs__read_file", "Read a file, as text, from the directories the server was given access to."},
	}
	termtext.PrintTable(os.Stdout, 60, []string{"NAME", "DESCRIPTION"}, rows)
	os.Stdout.WriteString(termtext.HowMany(len(rows), "tool") + "\n")
	// Output:
	// NAME                  DESCRIPTION
	// github__create_issue  Create an issue.
	// fs__read_file         Read a file, as text, from the direct…
	// 2 tools
}
