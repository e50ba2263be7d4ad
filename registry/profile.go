package registry

import (
	"encoding/json"
	"maps"
	"slices"
)

// Modes of a profile.
const (
	// ModeFull lists the profile's tools as they are.
	ModeFull = "full"
	// ModeSearch lists three tools instead of the profile's catalog: one
	// that finds tools by a query, one that returns a tool's schema and one
	// that calls a tool by name.
	ModeSearch = "search"
)

// Profile is one [profiles.NAME] table: a view of the hub's catalog chosen
// for one kind of client, served at /profiles/NAME/mcp.
//
// A profile's servers are those Servers names and those with one of Tags;
// with neither, every enabled server. Of their tools it keeps the ones whose
// qualified name (the server's registry name, the [hub] separator and the
// tool's own name, as in github__create_issue) matches an Include glob, when
// there are any, and no Exclude glob. Prompts and resources come from the
// profile's servers.
type Profile struct {
	// Name is the table name, with the rules of a server name.
	Name string
	// Servers and Tags choose the profile's servers.
	Servers, Tags []string
	// Include and Exclude are path.Match globs on qualified tool names.
	Include, Exclude []string
	// Prefixed names the tools as /mcp does (each server's prefix); false
	// gives each tool its server's own name, the first server in name
	// order keeping a name two of them offer.
	Prefixed bool
	// Mode is ModeFull or ModeSearch.
	Mode string
	// Overrides change tools of this profile, by qualified name; they are
	// laid over the registry's global ones field by field.
	Overrides map[string]*ToolOverride
	// Line is the line of the profile's table header.
	Line int
	// Problem, when set, says what is wrong with the profile (each problem
	// as file:line:col: key: message, one per line). Only ParseServing
	// keeps such a profile, which the hub does not serve (a key of the
	// wrong type could read as "every tool"); Parse refuses the file
	// instead.
	Problem string
	// problemID is Problem without positions, which Diff compares so that
	// an edit that only moves the profile is not a change of it.
	problemID string
}

// ToolOverride changes how a view shows one tool. Empty fields leave the
// tool's own value.
type ToolOverride struct {
	// Name is the name clients see instead.
	Name string
	// Title and Description replace the tool's own.
	Title, Description string
	// Annotations are set on the tool's annotations (readOnlyHint,
	// destructiveHint, idempotentHint, openWorldHint, title), each value
	// as JSON.
	Annotations map[string]json.RawMessage
	// Args are fixed argument values, as JSON: they are removed from the
	// input schema clients see and set on every call.
	Args map[string]json.RawMessage
}

// Profile returns the profile called name, or nil when there is none.
func (r *Registry) Profile(name string) *Profile {
	if r == nil {
		return nil
	}
	for _, p := range r.Profiles {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// SelectsServer reports whether the profile's servers include s (enabled or
// not: the caller serves only enabled ones).
func (p *Profile) SelectsServer(s *Server) bool {
	if len(p.Servers) == 0 && len(p.Tags) == 0 {
		return true
	}
	if slices.Contains(p.Servers, s.Name) {
		return true
	}
	for _, t := range s.Tags {
		if slices.Contains(p.Tags, t) {
			return true
		}
	}
	return false
}

// AllowsTool reports whether the profile keeps the tool with this qualified
// name (see Profile).
func (p *Profile) AllowsTool(qualified string) bool {
	return !matchesAny(p.Exclude, qualified) && (len(p.Include) == 0 || matchesAny(p.Include, qualified))
}

// Qualified is the name profiles and overrides know a server's tool by.
func (r *Registry) Qualified(server, tool string) string {
	return server + r.Hub.Separator + tool
}

// ToolOverride returns the override of the tool with this qualified name in
// profile p (nil for the views without a profile, /mcp): the global one with
// the profile's laid over it field by field. It returns nil when neither
// changes the tool.
func (r *Registry) ToolOverride(p *Profile, qualified string) *ToolOverride {
	g := r.Overrides[qualified]
	var o *ToolOverride
	if p != nil {
		o = p.Overrides[qualified]
	}
	switch {
	case o == nil:
		return g
	case g == nil:
		return o
	}
	out := *g
	if o.Name != "" {
		out.Name = o.Name
	}
	if o.Title != "" {
		out.Title = o.Title
	}
	if o.Description != "" {
		out.Description = o.Description
	}
	out.Annotations = overlay(g.Annotations, o.Annotations)
	out.Args = overlay(g.Args, o.Args)
	return &out
}

// overlay is a with b's entries laid over it; nil when both are empty.
func overlay(a, b map[string]json.RawMessage) map[string]json.RawMessage {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	maps.Copy(out, b)
	return out
}
