package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/textdist"
	"github.com/mcphub/mcphub/internal/toolsearch"
)

// The tools a profile in search mode lists instead of its catalog.
const (
	toolSearch   = "search_tools"
	toolDescribe = "describe_tool"
	toolCall     = "call_tool"
)

// searchTools is tools/list of a profile in search mode. The descriptions
// are short on purpose: they are what every request of the client costs.
var searchTools = []json.RawMessage{
	json.RawMessage(`{"name":"search_tools","description":"Find tools for a task. Returns the best matching tools with short descriptions; then use describe_tool for a tool's parameters and call_tool to run it.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in a few words, e.g. \"create issue\" or \"read file\""},"limit":{"type":"integer","description":"Most tools to return (default 10)"}},"required":["query"]},"annotations":{"readOnlyHint":true}}`),
	json.RawMessage(`{"name":"describe_tool","description":"Get a tool's full definition: description and input schema.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The tool's name, as search_tools returned it"}},"required":["name"]},"annotations":{"readOnlyHint":true}}`),
	json.RawMessage(`{"name":"call_tool","description":"Call a tool by name with its arguments, as its input schema (describe_tool) says.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The tool's name"},"arguments":{"type":"object","description":"The tool's arguments"}},"required":["name"]}}`),
}

// searchInstructions open the instructions of a profile in search mode.
const searchInstructions = "Tools are found on demand here: search_tools finds the tools for a task, describe_tool shows one's input schema, call_tool runs it."

// searchToolsDigest fingerprints searchTools, which never change.
var searchToolsDigest = func() string {
	h := sha256.New()
	for _, t := range searchTools {
		h.Write(t)
	}
	return hex.EncodeToString(h.Sum(nil))
}()

// searchView is what a catalog in search mode keeps for its search: the
// index over its tools and their words, made on first use.
type searchView struct {
	once  sync.Once
	index *toolsearch.Index
	vocab []string // every word of the tools, for suggestions
}

// words are the words of a text as a user writes them (the index's terms
// are stems): runs of letters and digits, lower-cased, of three or more.
func words(text string) []string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return slices.DeleteFunc(f, func(w string) bool { return len(w) < 3 })
}

// enableSearch puts a profile's catalog in search mode: tools/list holds
// the search tools; the catalog's own tools stay callable, through
// call_tool or by name.
func (c *catalog) enableSearch() {
	c.search = &searchView{}
	c.items["tools/list"] = searchTools
	c.digest["tools/list"] = searchToolsDigest
}

// searchIndex returns the catalog's search index, made once.
func (c *catalog) searchIndex() *searchView {
	sv := c.search
	sv.once.Do(func() {
		docs := make([]toolsearch.Doc, len(c.tools))
		seen := map[string]bool{}
		for i, t := range c.tools {
			var item struct {
				Name, Title, Description string
				InputSchema              struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"inputSchema"`
			}
			json.Unmarshal(t.item, &item)
			docs[i] = toolsearch.Doc{Name: item.Name, Title: item.Title, Description: item.Description}
			for p := range item.InputSchema.Properties {
				docs[i].Params = append(docs[i].Params, p)
			}
			slices.Sort(docs[i].Params)
			for _, text := range []string{item.Name, item.Title, item.Description} {
				for _, term := range words(text) {
					if !seen[term] {
						seen[term] = true
						sv.vocab = append(sv.vocab, term)
					}
				}
			}
		}
		slices.Sort(sv.vocab)
		sv.index = toolsearch.New(docs)
	})
	return sv
}

// searchCall answers a call of one of the search tools; handled is false
// for any other tool. What goes wrong with the request is a tool error
// saying what to do next, which the model reads, rather than a protocol
// error, which it may never see.
func (r *router) searchCall(ctx context.Context, c *call, view *catalog) (res json.RawMessage, handled bool, err error) {
	args, _ := jsonrpc.Member(c.m.Params, "arguments")
	switch c.p.name {
	case toolSearch:
		var in struct {
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		json.Unmarshal(args, &in)
		return view.searchTools(in.Query, in.Limit), true, nil
	case toolDescribe:
		name, _ := jsonrpc.StringMember(args, "name")
		t, ok := view.tool(name)
		if !ok {
			return view.noSuchTool(name), true, nil
		}
		return textResult(string(t.item), false), true, nil
	case toolCall:
		name, _ := jsonrpc.StringMember(args, "name")
		t, ok := view.tool(name)
		if !ok {
			return view.noSuchTool(name), true, nil
		}
		inner, ok := jsonrpc.Member(args, "arguments")
		if !ok || string(inner) == "null" {
			inner = json.RawMessage(`{}`)
		}
		if !isObject(inner) {
			return textResult(fmt.Sprintf("call_tool's arguments must be an object of %s's arguments; see describe_tool for its input schema", name), true), true, nil
		}
		params, err := jsonrpc.SetMember(c.m.Params, "arguments", inner)
		if err == nil {
			params, err = jsonrpc.SetMember(params, "name", jsonrpc.Quote(name))
		}
		if err != nil {
			return nil, true, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object")
		}
		res, err := r.forwardNamed(ctx, c, name, t, params)
		return res, true, err
	}
	return nil, false, nil
}

func isSearchTool(name string) bool {
	return name == toolSearch || name == toolDescribe || name == toolCall
}

// searchTools answers search_tools: the best matches, one line each.
func (c *catalog) searchTools(query string, limit int) json.RawMessage {
	if strings.TrimSpace(query) == "" {
		return textResult(`query is empty; say in a few words what the tool should do, e.g. "create issue" or "read file"`, true)
	}
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, 50)
	sv := c.searchIndex()
	found := sv.index.Search(query, limit)
	if len(found) == 0 {
		msg := fmt.Sprintf("no tool matches %q; try fewer or other words", query)
		var close []string
		for _, term := range words(query) {
			for _, s := range textdist.Suggest(term, sv.vocab, 2) {
				if !slices.Contains(close, s) {
					close = append(close, s)
				}
			}
		}
		if len(close) > 0 {
			msg += ", such as " + strings.Join(close, ", ")
		}
		if len(c.tools) == 0 {
			msg = "this profile has no tools; its servers may still be starting or not connected"
		}
		return textResult(msg, true)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d tools match %q, best first:\n", len(found), len(c.tools), query)
	for _, f := range found {
		b.WriteString(summary(c.tools[f.Doc].item))
		b.WriteByte('\n')
	}
	b.WriteString("(* marks a required argument.) Use describe_tool for a tool's input schema, then call_tool to run it.")
	return textResult(b.String(), false)
}

// summary is one line about a tool: its name, the first sentence of its
// description (at most 200 characters) and its parameters.
func summary(item json.RawMessage) string {
	var t struct {
		Name, Description string
		InputSchema       struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"inputSchema"`
	}
	json.Unmarshal(item, &t)
	desc := strings.Join(strings.Fields(t.Description), " ")
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	if r := []rune(desc); len(r) > 200 {
		desc = string(r[:199]) + "…"
	}
	line := t.Name
	if desc != "" {
		line += ": " + desc
	}
	var params []string
	for p := range t.InputSchema.Properties {
		if slices.Contains(t.InputSchema.Required, p) {
			p += "*"
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		slices.Sort(params)
		line += " (arguments: " + strings.Join(params, ", ") + ")"
	}
	return line
}

// noSuchTool is the tool error for a name the profile does not have.
func (c *catalog) noSuchTool(name string) json.RawMessage {
	if name == "" {
		return textResult("name is required: give a tool's name as search_tools returned it", true)
	}
	msg := fmt.Sprintf("no tool is named %q here", name)
	if isSearchTool(name) {
		msg = fmt.Sprintf("%s is one of the search tools; call it directly", name)
	} else if close := textdist.Suggest(name, mapKeys(c.toolIndex), 3); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ") + "?"
	} else {
		msg += "; use search_tools to find one"
	}
	return textResult(msg, true)
}

// textResult is a tools/call result holding one text.
func textResult(text string, isError bool) json.RawMessage {
	out := []byte(`{"content":[{"type":"text","text":`)
	out = jsonrpc.AppendString(out, text)
	out = append(out, `}]`...)
	if isError {
		out = append(out, `,"isError":true`...)
	}
	return append(out, '}')
}
