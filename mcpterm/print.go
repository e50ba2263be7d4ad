package mcpterm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/termtext"
)

// printRaw prints a JSON value indented, byte for byte what it holds apart
// from whitespace.
func printRaw(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("the hub's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printContent prints content blocks as a user reads them: text as it is,
// each block on its own lines; images and audio as a note with their MIME
// type and size; resource links as their URI, embedded resources as their
// text (a note for a binary one).
func printContent(w io.Writer, content []mcp.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			printText(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %s]\n", mimeOr(c.MIMEType), termtext.HowMany(len(c.Data), "byte"))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %s]\n", mimeOr(c.MIMEType), termtext.HowMany(len(c.Data), "byte"))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
			case c.Resource.Blob == nil && c.Resource.Text == "":
				fmt.Fprintf(w, "[resource %s]\n", c.Resource.URI)
			default:
				printResourceContents(w, c.Resource)
			}
		default:
			fmt.Fprintln(w, "[content of a type mcphub does not show; see it with --json]")
		}
	}
}

// printResourceContents prints a resource's contents: its text as it is, a
// binary one as a note with its URI, MIME type and size.
func printResourceContents(w io.Writer, c *mcp.ResourceContents) {
	if c.Blob != nil {
		fmt.Fprintf(w, "[%s %s, %s]\n", c.URI, mimeOr(c.MIMEType), termtext.HowMany(len(c.Blob), "byte"))
		return
	}
	printText(w, c.Text)
}

// printText prints text as it is, ending it with a newline when it has
// none.
func printText(w io.Writer, text string) {
	fmt.Fprint(w, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
}

// mimeOr is a MIME type as a note shows it: "of unknown type" for one that
// is empty or malformed.
func mimeOr(t string) string {
	if _, _, err := mime.ParseMediaType(t); err != nil || t == "" {
		return "of unknown type"
	}
	return t
}
