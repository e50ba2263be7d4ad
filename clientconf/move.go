package clientconf

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/registry"
)

// movePlan is what --move does with the client's other entries.
type movePlan struct {
	// remove are the entries to remove; why[i] says why remove[i] goes.
	remove []clientEntry
	why    []string
	// keep are the entries that stay; notes says why, by name, where the
	// default (the hub does not serve it) is not the reason.
	keep  []clientEntry
	notes map[string]string
}

// planMove sorts the client's entries into those the hub serves (and older
// entries for the whole hub or for profile, the view the new entry points
// at, which it replaces) and the rest. The hub's own entry, name, is
// neither.
func planMove(doc clientDoc, reg *registry.Registry, self registry.Self, name, profile string) (movePlan, error) {
	p := movePlan{notes: map[string]string{}}
	list, err := doc.entries()
	if err != nil {
		return p, err
	}
	for _, e := range list {
		if e.name == name {
			continue
		}
		var why, note string
		switch {
		case e.readable && registry.PointsAtHub(e.spec, self):
			if note = hubScope(e, profile); note == "" {
				// An older entry for this hub under another name: the
				// client would talk to the hub twice.
				why = fmt.Sprintf("it points at this hub too; %q replaces it", name)
			}
		default:
			var s string
			if s, note = servedBy(reg, e); s != "" {
				why = fmt.Sprintf("the hub serves it as %q", s)
			}
		}
		if why != "" {
			p.remove, p.why = append(p.remove, e), append(p.why, why)
			continue
		}
		p.keep = append(p.keep, e)
		if note != "" {
			p.notes[e.name] = note
		}
	}
	return p, nil
}

// hubScope says why an entry that points at this hub is not an older copy
// of the hub's own entry, which points at profile's endpoint (/mcp when
// profile is ""): it reaches one server's endpoint (/NAME/mcp, or mcphub
// stdio --server NAME), another profile's (/profiles/NAME/mcp, or mcphub
// stdio --profile NAME) or another path, which the user chose to scope what
// the client sees. It returns "" for an entry of the hub's /mcp endpoint
// (mcphub stdio with neither flag) or of profile's: the hub's entry
// replaces such an entry, so that the client does not reach the hub twice.
func hubScope(e clientEntry, profile string) string {
	if e.spec.URL != "" {
		return urlScope(e.spec.URL, profile)
	}
	for i := 0; i < len(e.spec.Args); i++ {
		a := e.spec.Args[i]
		if a == "--" {
			break
		}
		for _, flag := range []string{"--server", "--profile"} {
			value, ok := strings.CutPrefix(a, flag+"=")
			if a == flag && i+1 < len(e.spec.Args) {
				value, ok = e.spec.Args[i+1], true
			}
			switch {
			case !ok || value == "":
			case flag == "--server":
				return fmt.Sprintf("it runs mcphub stdio --server %s, which shows only that server of this hub; keep it for that, or remove it by hand", value)
			case value != profile:
				return profileScope(value, "mcphub stdio --profile "+value)
			}
		}
	}
	// An mcp-remote bridge: the URL it is given.
	for _, a := range e.spec.Args {
		if u, err := url.Parse(a); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			if note := urlScope(a, profile); note != "" {
				return note
			}
		}
	}
	return ""
}

// urlScope is hubScope for a URL on the hub.
func urlScope(raw, profile string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "it points at this hub, at an address mcphub cannot read; remove it by hand if the hub's entry replaces it"
	}
	p := u.Path
	if p == "/mcp" || p == "/mcp/" {
		return ""
	}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) == 3 && segs[0] == "profiles" && segs[1] != "" && segs[2] == "mcp" {
		if segs[1] == profile {
			return ""
		}
		return profileScope(segs[1], path.Clean("/"+p))
	}
	if len(segs) == 2 && segs[1] == "mcp" {
		return fmt.Sprintf("it points at only the hub's server %q (%s), not at every server; keep it for that, or remove it by hand", segs[0], path.Clean("/"+p))
	}
	return fmt.Sprintf("it points at %s on this hub, not at its /mcp endpoint; remove it by hand if the hub's entry replaces it", path.Clean("/"+p))
}

// profileScope is hubScope's note for an entry of another profile of the
// hub than the one connected, which it reaches through how.
func profileScope(profile, how string) string {
	return fmt.Sprintf("it points at the hub's profile %q (%s), another view than the hub's entry; keep it for that, or remove it by hand", profile, how)
}

// servedBy returns the name of the enabled registry server that runs just
// what e runs: the same command (by base name, without .cmd or .exe; the
// same file when both paths are absolute), args, env and working
// directory, or the same URL (ignoring a trailing slash) and headers, with
// neither side filtering tools. When none does but one runs the same
// command and args, or has the same URL, note says which and what differs,
// without any value.
func servedBy(reg *registry.Registry, e clientEntry) (server, note string) {
	if !e.readable {
		return "", ""
	}
	for _, s := range reg.Servers {
		if !s.Enabled || s.Problem != "" {
			continue
		}
		what := ""
		switch {
		case e.spec.Command != "" && s.Command != "":
			if commandBase(e.spec.Command) == commandBase(s.Command) && slices.Equal(e.spec.Args, s.Args) {
				what = "command and args"
			}
		case e.spec.Command == "" && e.spec.URL != "" && s.URL != "":
			if strings.TrimSuffix(e.spec.URL, "/") == strings.TrimSuffix(s.URL, "/") {
				what = "URL"
			}
		}
		if what == "" {
			continue
		}
		diff := differs(s, e)
		if diff == "" {
			return s.Name, ""
		}
		if note == "" {
			note = fmt.Sprintf("it has the same %s as the hub's %q, but %s; remove it by hand if the hub's server does the same", what, s.Name, diff)
		}
	}
	return "", note
}

// differs says how e, whose command and args or URL are s's, runs
// otherwise than s: "" when it does not. It names keys, never values.
func differs(s *registry.Server, e clientEntry) string {
	switch {
	case len(s.Allow) > 0 || len(s.Deny) > 0:
		return "the hub's server exposes only some of its tools (allow/deny)"
	case len(e.spec.Allow) > 0 || len(e.spec.Deny) > 0:
		return "it exposes only some of the server's tools"
	case e.spec.Disabled:
		return "it is disabled in this file"
	}
	if s.URL != "" {
		return mapDiffers("header", canonicalHeaders(e.spec.Headers), canonicalHeaders(s.Headers), e.prompted)
	}
	if filepath.IsAbs(e.spec.Command) && filepath.IsAbs(s.Command) && !registry.SamePath(e.spec.Command, s.Command) {
		return "its command is another file than the hub's"
	}
	if d := mapDiffers("env", e.spec.Env, s.Env, e.prompted); d != "" {
		return d
	}
	if e.spec.Cwd == "" && s.Cwd == "" {
		return ""
	}
	cwd, ok := expandClientValue(e.spec.Cwd, e.prompted)
	cwd = registry.ExpandHome(cwd, os.LookupEnv)
	switch {
	case !ok || (cwd != "" && !filepath.IsAbs(cwd)):
		return "its working directory cannot be checked"
	case cwd == "" || s.Cwd == "" || !registry.SamePath(cwd, s.Cwd):
		return "its working directory differs"
	}
	return ""
}

// mapDiffers compares an entry's env or headers (mcphub's ${VAR} form,
// expanded here with this process's environment) with a registry server's
// expanded ones. It names the first key that differs, never a value.
func mapDiffers(what string, mine, hub map[string]string, prompted bool) string {
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if _, ok := hub[k]; !ok {
			return fmt.Sprintf("it sets the %s %s, which the hub's server does not", what, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(hub)) {
		v, ok := mine[k]
		if !ok {
			return fmt.Sprintf("the hub's server sets the %s %s, which it does not", what, k)
		}
		got, ok := expandClientValue(v, prompted)
		if !ok {
			return fmt.Sprintf("its %s %s cannot be checked (it refers to a variable mcphub does not have, or asks the user)", what, k)
		}
		if got != hub[k] {
			return fmt.Sprintf("its %s %s has another value", what, k)
		}
	}
	return ""
}

// canonicalHeaders keys headers by their canonical names, as HTTP compares
// them.
func canonicalHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// expandClientValue expands a value in mcphub's form, as import writes a
// client's value, by registry.Expand with this process's environment. ok is
// false when the value cannot be known here: a variable that is not set, a
// reference registry.Expand refuses, a $NAME the client expands but mcphub
// keeps as text (import writes it as $$NAME), or any reference in an entry
// whose values the client asks the user for.
func expandClientValue(v string, prompted bool) (string, bool) {
	for i := 0; i+1 < len(v); i++ {
		if v[i] == '$' && v[i+1] == '$' {
			if i+2 < len(v) && strings.IndexByte("{_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", v[i+2]) >= 0 {
				return "", false
			}
			i++
		}
	}
	lookup := os.LookupEnv
	if prompted {
		// The value the user gives is unknown: every reference is unset.
		lookup = func(string) (string, bool) { return "", false }
	}
	out, unset, err := registry.Expand(v, lookup)
	if err != nil || len(unset) > 0 {
		return "", false
	}
	return out, true
}

// commandBase is a command's file name without .cmd or .exe, so that npx,
// /usr/local/bin/npx and C:\...\npx.cmd compare equal.
func commandBase(cmd string) string {
	base := path.Base(strings.ReplaceAll(cmd, `\`, "/"))
	for _, ext := range []string{".cmd", ".exe"} {
		if len(base) > len(ext) && strings.EqualFold(base[len(base)-len(ext):], ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}
