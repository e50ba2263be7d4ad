package tokencount

import "fmt"

// ToolCap is an AI client's limit on the number of tools it takes: a hub
// that lists more than the cap loses tools silently (or, in VS Code, the
// request), so both tokens and connect warn of it.
type ToolCap struct {
	// ID is the client as connect names it: "cursor".
	ID string
	// Client is the client as a sentence names it: "Cursor".
	Client string
	Cap    int
	// About says the cap is approximate.
	About bool
	// PerRequest says the cap applies to each request.
	PerRequest bool
}

// ToolCaps are the known clients' tool caps, in the order reports name
// them.
var ToolCaps = []ToolCap{
	{ID: "cursor", Client: "Cursor", Cap: 40, About: true},
	{ID: "windsurf", Client: "Windsurf", Cap: 100},
	{ID: "vscode", Client: "VS Code Copilot", Cap: 128, PerRequest: true},
}

// Wording is the cap as a sentence names it: "about 40 tools", or without
// tools "about 40".
func (c ToolCap) Wording(tools bool) string {
	s := fmt.Sprint(c.Cap)
	if c.About {
		s = "about " + s
	}
	if tools {
		s += " tools"
	}
	if c.PerRequest {
		s += " per request"
	}
	return s
}

// Does says what the client does with the tools it is given: "Cursor uses
// about the first 40", so that a warning can say what the user will see.
func (c ToolCap) Does() string {
	switch {
	case c.About:
		return fmt.Sprintf("%s uses about the first %d", c.Client, c.Cap)
	case c.PerRequest:
		return fmt.Sprintf("%s refuses a request with more than %d", c.Client, c.Cap)
	}
	return fmt.Sprintf("%s takes at most %d", c.Client, c.Cap)
}
