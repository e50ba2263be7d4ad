package mcpterm

import (
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/termtext"
)

// progressLine shows the progress notifications of one request as a single
// line on a terminal, rewritten in place; on anything else it shows nothing.
type progressLine struct {
	w     io.Writer
	on    bool
	width int // the terminal's columns

	mu    sync.Mutex
	shown bool
	done  bool
}

// progressLine is the progress line of a call on c's Stderr: on only for
// a terminal that acts on escape sequences.
func (c *Client) progressLine() *progressLine {
	isTerm, vt := c.IsTerminal, c.VirtualTerminal
	if isTerm == nil {
		isTerm = IsTerminal
	}
	if vt == nil {
		vt = EnableVirtualTerminal
	}
	l := &progressLine{w: c.Stderr, width: terminalWidth(c.Stderr)}
	l.on = isTerm(c.Stderr) && vt(c.Stderr)
	return l
}

// show rewrites the line with p.
func (l *progressLine) show(p *mcp.ProgressNotificationParams) {
	if !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	fmt.Fprintf(l.w, "\r\x1b[K%s", termtext.CutToWidth(termtext.Progress(p.Progress, p.Total, p.Message), max(l.width-1, 10)))
	l.shown = true
}

// clear removes the line for good, before the result is printed.
func (l *progressLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}
