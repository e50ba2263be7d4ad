package hubclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// CodeResourceNotFound is the JSON-RPC code of resources/read for a URI no
// server has.
const CodeResourceNotFound = -32002

// FindTool is the tool name of the session's view, or the error saying
// there is none: a caller reads its input schema to type the arguments.
func (s *Session) FindTool(ctx context.Context, name string) (*Tool, error) {
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	listed, own, err := s.toolItems(lctx)
	if err != nil {
		return nil, s.Fail("list the tools of "+s.Where(), err)
	}
	raws := append(listed, own...)
	if i := slices.Index(ItemNames(raws), name); i >= 0 {
		var tool Tool
		if err := json.Unmarshal(raws[i], &tool); err != nil {
			return nil, fmt.Errorf("the hub's tool %s is malformed: %w", name, err)
		}
		return &tool, nil
	}
	return nil, s.unknownToolErr(name, listed, own)
}

// toolItems are the tools a call on the session may name: those its
// tools/list holds and, on a profile in search mode, the profile's own
// tools (own), which it serves by name without listing them.
func (s *Session) toolItems(ctx context.Context) (listed, own []json.RawMessage, err error) {
	if listed, err = s.ListAll(ctx, "tools/list"); err != nil || !s.SearchMode() {
		return listed, nil, err
	}
	cat, err := s.target.Catalog(ctx, s.view.Profile, ListTimeout)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range cat.Tools {
		own = append(own, t.Item)
	}
	return listed, own, nil
}

// unknownToolErr says that the session's view has no tool name, among
// listed and own (toolItems): on a profile in search mode, naming the
// closest of the profile's own tools, which tokens -v lists.
func (s *Session) unknownToolErr(name string, listed, own []json.RawMessage) error {
	if s.SearchMode() {
		return s.unknownNameErr("tool", name, ItemNames(own), "mcphub tokens --profile "+s.view.Profile+" -v")
	}
	return s.unknownNameErr("tool", name, ItemNames(listed), s.LsCommand("tools"))
}

// UnknownTool is the error for a call the hub refused with invalid params
// when name is none of its tools; nil when it is one, or the list cannot be
// had.
func (s *Session) UnknownTool(ctx context.Context, name string) error {
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	listed, own, err := s.toolItems(lctx)
	if err != nil {
		return nil
	}
	if slices.Contains(ItemNames(append(listed, own...)), name) {
		return nil
	}
	return s.unknownToolErr(name, listed, own)
}

// UnknownPrompt is the error for a get the hub refused with invalid params
// when name is none of its prompts; nil when it is one, or the list cannot
// be had.
func (s *Session) UnknownPrompt(ctx context.Context, name string) error {
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	prompts, err := s.ListAll(lctx, "prompts/list")
	if err != nil {
		return nil
	}
	names := ItemNames(prompts)
	if slices.Contains(names, name) {
		return nil
	}
	return s.unknownNameErr("prompt", name, names, s.LsCommand("prompts"))
}

// UnknownResource is the error for a read the hub refused as not found
// (err): its message, with the resources closest to uri when uri is none of
// the hub's resources and no template's (a URI a template covers, or one
// with a template's scheme, may well exist: the server said why it does not
// serve it).
func (s *Session) UnknownResource(ctx context.Context, uri string, err error) error {
	refused := s.Fail("read "+uri, err)
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	resources, rerr := s.ListAll(lctx, "resources/list")
	templates, terr := s.ListAll(lctx, "resources/templates/list")
	if rerr != nil || terr != nil || coveredByTemplate(uri, templates) {
		return refused
	}
	uris := make([]string, len(resources))
	for i, r := range resources {
		uris[i], _ = jsonrpc.StringMember(r, "uri")
	}
	if slices.Contains(uris, uri) {
		return refused
	}
	return fmt.Errorf("%w%s", refused, SuggestNames("resource", uri, uris, s.LsCommand("resources"), s.Where()))
}

// coveredByTemplate reports whether uri is one a resource template can
// expand to (RFC 6570), or has the scheme of one.
func coveredByTemplate(uri string, templates []json.RawMessage) bool {
	scheme := uriScheme(uri)
	for _, t := range templates {
		ut, ok := jsonrpc.StringMember(t, "uriTemplate")
		if !ok {
			continue
		}
		if tpl, err := uritemplate.New(ut); err == nil && tpl.Regexp().MatchString(uri) {
			return true
		}
		if ts := uriScheme(ut); scheme != "" && strings.EqualFold(ts, scheme) {
			return true
		}
	}
	return false
}

// uriScheme is the scheme a URI (or URI template) starts with, "" when it
// starts with none.
func uriScheme(uri string) string {
	scheme, _, ok := strings.Cut(uri, ":")
	if !ok || scheme == "" {
		return ""
	}
	for i, r := range scheme {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return ""
		}
	}
	return scheme
}
