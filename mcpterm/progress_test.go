package mcpterm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
)

// TestProgressLine: on a terminal each notification rewrites one line,
// cut to the terminal's width, and clear removes it; elsewhere nothing is
// written at all.
func TestProgressLine(t *testing.T) {
	var out bytes.Buffer
	l := &progressLine{w: &out, on: true, width: 40}
	l.show(&mcp.ProgressNotificationParams{Progress: 1, Total: 4, Message: "reading\nfiles"})
	l.show(&mcp.ProgressNotificationParams{Progress: 2.5, Message: "a message far too long for the line"})
	l.clear()
	l.show(&mcp.ProgressNotificationParams{Progress: 3, Total: 4})
	want := "\r\x1b[Kprogress 1/4 (25%) reading files" + "\r\x1b[Kprogress 2.50 a message far too long f…" + "\r\x1b[K"
	if out.String() != want {
		t.Errorf("terminal output %q, want %q", out.String(), want)
	}
	out.Reset()
	l = &progressLine{w: &out, width: 80}
	l.show(&mcp.ProgressNotificationParams{Progress: 1, Total: 2})
	l.clear()
	if out.Len() != 0 {
		t.Errorf("not a terminal, yet the progress line wrote %q", out.String())
	}

	// A server's control characters never reach the terminal.
	out.Reset()
	l = &progressLine{w: &out, on: true, width: 80}
	l.show(&mcp.ProgressNotificationParams{Progress: 1, Message: "\x1b]0;title\x07red\x1b[31m\u009b2J\x00\tend\xff"})
	if want := "\r\x1b[Kprogress 1 ]0;titlered[31m2J end\ufffd"; out.String() != want {
		t.Errorf("a message with control characters wrote %q, want %q", out.String(), want)
	}

	// Wide characters count two columns: the line still fits.
	out.Reset()
	l = &progressLine{w: &out, on: true, width: 20}
	l.show(&mcp.ProgressNotificationParams{Progress: 1, Message: "進捗進捗進捗進捗進捗"})
	line := strings.TrimPrefix(out.String(), "\r\x1b[K")
	if want := "progress 1 進捗進…"; line != want {
		t.Errorf("a line of wide characters is %q, want %q", line, want)
	}
	cols := 0
	for _, r := range line {
		cols += termtext.RuneColumns(r)
	}
	if cols > 19 {
		t.Errorf("the line %q takes %d columns of a 20-column terminal", line, cols)
	}
}

// TestProgressHandler: only the progress of the CLI's own call reaches the
// line; a request of the hub is refused.
func TestProgressHandler(t *testing.T) {
	var out bytes.Buffer
	h := progressHandler{prog: &progressLine{w: &out, on: true, width: 80}}
	h.HandleNotification(&jsonrpc.Message{Method: "notifications/progress", Params: []byte(`{"progressToken":"other","progress":1}`)}, nil)
	h.HandleNotification(&jsonrpc.Message{Method: "notifications/message", Params: []byte(`{"progressToken":"mcphub-cli","progress":1}`)}, nil)
	h.HandleNotification(&jsonrpc.Message{Method: "notifications/progress", Params: []byte(`{"progressToken":"mcphub-cli","progress":2,"total":4}`)}, nil)
	if want := "\r\x1b[Kprogress 2/4 (50%)"; out.String() != want {
		t.Errorf("the line is %q, want %q", out.String(), want)
	}
	if _, err := h.HandleRequest(t.Context(), &jsonrpc.Message{Method: "sampling/createMessage"}, nil); err == nil ||
		!strings.Contains(err.Error(), "mcphub tools call does not answer sampling/createMessage") {
		t.Errorf("a request of the hub: %v", err)
	}
}
