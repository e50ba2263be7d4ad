package hubclient

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/internal/textdist"
)

// Tool, Prompt, Resource and ResourceTemplate are what a terminal shows of
// an item of tools/list, prompts/list, resources/list and
// resources/templates/list: the rest of each item stays in the raw JSON the
// hub sent, which --json prints.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Prompt is what a terminal shows of a prompt (see Tool).
type Prompt struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Arguments   []*struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	} `json:"arguments"`
}

// Resource is what a terminal shows of a resource (see Tool).
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ResourceTemplate is what a terminal shows of a resource template (see
// Tool).
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// DecodeItems decodes raw items of method (as ListAll returns them) into
// T, for a table; an item that does not decode fails them all, naming it.
func DecodeItems[T any](method string, raws []json.RawMessage) ([]T, error) {
	items := make([]T, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			return nil, fmt.Errorf("%s: the hub's item %d is malformed: %w", method, i+1, err)
		}
	}
	return items, nil
}

// ItemNames are the names of raw items (tools, prompts), "" for one
// without.
func ItemNames(items []json.RawMessage) []string {
	names := make([]string, len(items))
	for i, t := range items {
		names[i], _ = jsonrpc.StringMember(t, "name")
	}
	return names
}

// SuggestNames is what follows a sentence saying that name is not a kind
// ("tool") of a view: the closest names it has, and the command lsCmd that
// lists them all; subject is how the view is referred to ("it", "the
// hub").
func SuggestNames(kind, name string, names []string, lsCmd, subject string) string {
	if len(names) == 0 {
		return fmt.Sprintf("; %s serves no %ss (run \"mcphub status\" to see its servers)", subject, kind)
	}
	msg := ""
	if close := textdist.Suggest(name, names, 3); len(close) > 0 {
		msg = " (did you mean " + strings.Join(close, ", ") + "?)"
	}
	return fmt.Sprintf("%s; run %q to see the %s %s serves", msg, lsCmd, termtext.HowMany(len(names), kind), subject)
}

// unknownNameErr says that the view has no kind named name, how many it has
// and the command that lists them, naming the closest ones it has.
func (s *Session) unknownNameErr(kind, name string, names []string, lsCmd string) error {
	return fmt.Errorf("no %s %q on %s%s", kind, name, s.Where(), SuggestNames(kind, name, names, lsCmd, "it"))
}

// LsCommand is the command that lists kind ("tools") of the session's
// view, which the sentences about an unknown name point to.
func (s *Session) LsCommand(kind string) string {
	switch {
	case s.view.Server != "":
		return "mcphub " + kind + " ls " + s.view.Server
	case s.view.Profile != "":
		return "mcphub " + kind + " ls --profile " + s.view.Profile
	}
	return "mcphub " + kind + " ls"
}
