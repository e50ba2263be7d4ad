package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

const connectLong = `Print the configuration entry that points a client at this hub's /mcp
endpoint, including the Authorization header when [hub] auth = "token".
With --stdio (and always for Claude Desktop, which runs only stdio servers
from its file) the entry runs "mcphub stdio" by its absolute path instead.

With --profile NAME the entry points at the profile's endpoint,
/profiles/NAME/mcp (or runs "mcphub stdio --profile NAME"): the client sees
the servers and tools [profiles.NAME] in the registry selects, or in search
mode three tools that find and call them. The entry keeps its name (--name),
so a client has one entry for the hub, whichever view it points at.

Cursor uses about the first 40 tools it is given, Windsurf at most 100, and
VS Code Copilot refuses a request with more than 128. For these clients
connect asks the running hub how many tools the endpoint lists, and warns
when they are more; with --profile and no hub running, it says the count
could not be checked.

Clients and the files --write edits (--file picks another):
  claude          Claude Code     ~/.claude.json
  claude-desktop  Claude Desktop  claude_desktop_config.json in the Claude folder
                                  of the user config directory
  cursor          Cursor          ~/.cursor/mcp.json
  vscode          VS Code         .vscode/mcp.json in the current directory
  windsurf        Windsurf        ~/.codeium/windsurf/mcp_config.json
  gemini          Gemini CLI      ~/.gemini/settings.json
  zed             Zed             ~/.config/zed/settings.json (Windows: %AppData%\Zed)
  codex           Codex           $CODEX_HOME/config.toml or ~/.codex/config.toml

--write adds the hub's entry, or brings an existing one up to date by
changing only what mcphub writes there (type, url, serverUrl, httpUrl,
headers, http_headers, command, args); the client's own settings on it,
comments, trailing commas, the order of members and every other entry stay
as they were. The old file is kept beside it as
FILE.mcphub-backup-<UTC time>. Running it again changes nothing.

--move (with --write) also removes the entries the hub now serves, so no
server runs twice: those that run just what an enabled server of the
registry runs (the same command, args, env and working directory, or the
same URL and headers, with no tool filter on either side), and older
entries under another name for this hub's /mcp endpoint (or mcphub stdio
without --server and --profile) or for the profile connected (its
/profiles/NAME/mcp, or mcphub stdio --profile NAME). An entry that only
shares the command and args, or the URL, is kept with a note saying what
differs; so is one that points at a single server of this hub, or at
another profile. The others are kept and listed; mcphub import FILE adds
them to the hub.

--json (with --write) prints one JSON object instead: client, file, wrote,
backup, added or updated (the entry's name), removed [{name, reason}],
kept [{name, note}], notes and warnings (such as a tool cap the endpoint
exceeds). It holds no token or other secret value.`

// connectOptions are mcphub connect's flags.
type connectOptions struct {
	write, stdio, move, json bool
	name, file, profile      string
}

func newConnectCmd(a *app) *cobra.Command {
	var o connectOptions
	cmd := &cobra.Command{
		Use:       "connect CLIENT",
		Short:     "Print (or --write) the config that points a client at this hub",
		Long:      connectLong,
		Args:      cobra.ExactArgs(1),
		ValidArgs: clientNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.connect(cmd.Context(), args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.write, "write", false, "add the entry to the client's config file (keeping a backup)")
	fl.BoolVar(&o.move, "move", false, "with --write: also remove the client's entries for servers the hub serves")
	fl.BoolVar(&o.stdio, "stdio", false, "write an entry that runs `mcphub stdio` instead of the HTTP one")
	fl.BoolVar(&o.json, "json", false, "with --write: print what was done as one JSON object, for scripts")
	fl.StringVar(&o.name, "name", "mcphub", "the entry's name in the client's config")
	fl.StringVar(&o.file, "file", "", "the client's config file, when it is not in the usual place")
	fl.StringVar(&o.profile, "profile", "", "point the client at a profile's endpoint (/profiles/NAME/mcp) instead of /mcp")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

func (a *app) connect(ctx context.Context, client string, o connectOptions) error {
	c, err := lookupClient(client)
	if err != nil {
		return err
	}
	if o.move && !o.write {
		return errors.New("--move changes the client's file, so it needs --write")
	}
	if o.json && !o.write {
		return errors.New("--json reports what --write did, so it needs --write")
	}
	if o.name == "" {
		return errors.New("--name must not be empty")
	}
	reg, err := a.loadRegistry()
	if err != nil {
		return a.printRegistryErrors(err)
	}
	view := hubclient.View{Profile: o.profile}
	if err := a.checkRegistryView(reg, view); err != nil {
		return err
	}
	stdio := o.stdio || c.remote == nil
	var hubURL, tok string
	var headers map[string]string
	if !stdio {
		if tok, err = hubclient.Token(reg); err != nil {
			return err
		}
		hubURL = a.locator().For(reg, tok).URL(view.Path())
		if tok != "" {
			headers = map[string]string{"Authorization": "Bearer " + tok}
		}
	}
	e, err := a.hubEntry(c, stdio, hubURL, headers, o.profile)
	if err != nil {
		return err
	}
	warning, note := a.checkToolCap(ctx, reg, c, o.profile)
	file := o.file
	if file == "" {
		if file, err = c.path(); err != nil {
			return err
		}
	}
	if !o.write {
		a.printEntry(c, file, o.name, e)
		if c.name == "claude" {
			fmt.Fprintf(a.stdout, "# or:\n%s\n", claudeAddLine(o.name, e, stdio))
		}
		if warning != "" {
			fmt.Fprintf(a.stderr, "warning: %s\n", warning)
		}
		if note != "" {
			fmt.Fprintf(a.stderr, "note: %s\n", note)
		}
		return nil
	}
	res, err := a.writeEntry(c, file, o.name, e, reg, o.move, o.profile)
	if errors.Is(err, errNotEditable) {
		// The entry is not where mcphub can edit it; the user replaces it.
		msg := fmt.Sprintf("the entry %q is %v; replace it by hand", o.name, err)
		if o.json {
			res.Error = msg + " (mcphub connect " + c.name + " prints it)"
			a.printResult(res)
		} else {
			fmt.Fprintf(a.stdout, "%s: %s with:\n%s", file, msg, snippet(c, o.name, e))
		}
		return exitError{code: 1}
	}
	if err != nil {
		return err
	}
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	if c.name == "vscode" && tok != "" {
		res.Notes = append(res.Notes, file+" now holds the hub's token; keep it out of version control")
	}
	if res.Wrote && (c.name == "claude-desktop" || c.name == "claude") {
		res.Notes = append(res.Notes, "restart "+c.title+" to load it")
	}
	if o.json {
		a.printResult(res)
		return nil
	}
	a.printReport(res)
	return nil
}

// connectResult is what connect --write did, as --json prints it. It
// holds names, paths and reasons, never a token or another secret value.
type connectResult struct {
	Client string `json:"client"`
	File   string `json:"file"`
	// Wrote is false when the file was up to date already.
	Wrote  bool   `json:"wrote"`
	Backup string `json:"backup"`
	// Added or Updated is the hub's entry's name when it was added or
	// changed.
	Added   string         `json:"added,omitempty"`
	Updated string         `json:"updated,omitempty"`
	Removed []removedEntry `json:"removed"`
	Kept    []keptEntry    `json:"kept"`
	// Notes are more things to know, such as a client to restart.
	Notes []string `json:"notes,omitempty"`
	// Warnings are what may keep the entry from working as meant, such
	// as a tool cap of the client the endpoint exceeds.
	Warnings []string `json:"warnings,omitempty"`
	// Error says why nothing was written, when the entry cannot be edited.
	Error string `json:"error,omitempty"`
	// strict is set when a client that wants standard JSON has a file
	// with comments or trailing commas.
	strict bool
	title  string
	// entry is the hub's entry's name.
	entry string
}

type removedEntry struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

type keptEntry struct {
	Name string `json:"name"`
	Note string `json:"note"`
}

// printResult prints res as one JSON object on a line.
func (a *app) printResult(res connectResult) {
	b, _ := marshalJSON(res)
	fmt.Fprintf(a.stdout, "%s\n", b)
}

// printReport prints res for a person.
func (a *app) printReport(res connectResult) {
	if !res.Wrote {
		fmt.Fprintf(a.stdout, "%s is already up to date\n", res.File)
	}
	if res.Backup != "" {
		fmt.Fprintf(a.stdout, "backed up %s to %s\n", res.File, res.Backup)
	}
	for _, r := range res.Removed {
		fmt.Fprintf(a.stdout, "removed %q from %s (%s)\n", r.Name, res.File, r.Reason)
	}
	if res.Wrote {
		fmt.Fprintf(a.stdout, "wrote server %q into %s\n", res.entry, res.File)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(a.stdout, "kept %q in %s: %s\n", k.Name, res.File, k.Note)
	}
	if res.strict {
		fmt.Fprintf(a.stdout, "note: %s has comments or trailing commas, which %s may not accept\n", res.File, res.title)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(a.stdout, "note: %s\n", n)
	}
	// Warnings go on stderr, as every other warning does.
	for _, w := range res.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
}

// checkToolCap asks the running hub how many tools the endpoint the entry
// points at lists (/mcp, or profile's), when client c caps them: warning
// says the count exceeds the cap, and how to bring it down. With a profile,
// note says when the count could not be checked.
func (a *app) checkToolCap(ctx context.Context, reg *registry.Registry, c clientKind, profile string) (warning, note string) {
	i := slices.IndexFunc(toolCaps, func(tc toolCap) bool { return tc.id == c.name })
	if i < 0 {
		return "", ""
	}
	cp := toolCaps[i]
	unchecked := func(why string) string {
		if profile == "" {
			return ""
		}
		return fmt.Sprintf("%s, so whether profile %s fits %s's cap of %s could not be checked", why, profile, cp.client, cp.wording(true))
	}
	tok, err := hubclient.Token(reg)
	if err != nil {
		return "", unchecked("the hub's token could not be read")
	}
	t := a.locator().For(reg, tok)
	cat, err := t.Catalog(ctx, profile, hubclient.ConnectTimeout)
	switch {
	case errors.Is(err, hubclient.ErrNoHub):
		return "", unchecked("no hub is running at " + t.Listen)
	case err != nil:
		return "", unchecked(fmt.Sprintf("the hub could not be asked (%v)", err))
	case len(cat.Listed) <= cp.cap:
		return "", ""
	}
	if profile == "" {
		return fmt.Sprintf("the hub's /mcp lists %d tools; %s. Narrow it with allow/deny on its servers, or connect a profile with --profile NAME ([profiles.NAME] in %s; mode = \"search\" lists 3 tools)",
			len(cat.Listed), cp.does(), reg.Path), ""
	}
	return fmt.Sprintf("profile %s lists %d tools; %s. Narrow it with include/exclude in [profiles.%s], or set mode = \"search\" (3 tools)",
		profile, len(cat.Listed), cp.does(), profile), ""
}

// snippet is the entry as the client's file would hold it.
func snippet(c clientKind, name string, e entry) string {
	if c.format == formatTOML {
		return tomlTable(name, e, "\n")
	}
	b, _ := indentJSON(map[string]any{c.key: map[string]any{name: e}}, "", "  ")
	return string(b) + "\n"
}

// printEntry prints the entry for the user to paste.
func (a *app) printEntry(c clientKind, file, name string, e entry) {
	where := fmt.Sprintf("under %q in %s", c.key, file)
	if c.format == formatTOML {
		where = "to " + file
	}
	fmt.Fprintf(a.stdout, "# %s: add this %s (or run mcphub connect %s --write)\n%s", c.title, where, c.name, snippet(c, name, e))
}

// claudeAddLine is the claude command that adds the entry, for users who
// let Claude Code edit its own file.
func claudeAddLine(name string, e entry, stdio bool) string {
	fields := map[string]any{}
	for _, f := range e {
		fields[f.key] = f.value
	}
	if stdio {
		args, _ := fields["args"].([]string)
		line := "claude mcp add --transport stdio --scope user " + name + " --"
		for _, w := range append([]string{fields["command"].(string)}, args...) {
			line += " " + shellQuote(w)
		}
		return line
	}
	line := "claude mcp add --transport http --scope user"
	h, _ := fields["headers"].(map[string]string)
	for _, k := range slices.Sorted(maps.Keys(h)) {
		line += " --header " + shellQuote(k+": "+h[k])
	}
	return line + " " + name + " " + fields["url"].(string)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

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
	if filepath.IsAbs(e.spec.Command) && filepath.IsAbs(s.Command) && !sameFile(e.spec.Command, s.Command) {
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
	case cwd == "" || s.Cwd == "" || !sameFile(cwd, s.Cwd):
		return "its working directory differs"
	}
	return ""
}

// mapDiffers compares an entry's env or headers (mcphub's ${VAR} form,
// expanded here with this process's environment) with a registry server's
// expanded ones. It names the first key that differs, never a value.
func mapDiffers(what string, entry, hub map[string]string, prompted bool) string {
	for _, k := range slices.Sorted(maps.Keys(entry)) {
		if _, ok := hub[k]; !ok {
			return fmt.Sprintf("it sets the %s %s, which the hub's server does not", what, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(hub)) {
		v, ok := entry[k]
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

// hubSelf is what tells this hub apart from an upstream in the client's
// file: the registry's listen address, the one a running hub recorded
// (serve --listen may differ), and the registry file.
func (a *app) hubSelf(reg *registry.Registry) registry.Self {
	self := registry.Self{Listens: []string{reg.Hub.Listen}, Config: reg.Path}
	// A stale record errs on the side of never importing a hub.
	if info, err := hubclient.ReadRunInfo(a.dataDir); err == nil && info.Listen != "" && !slices.Contains(self.Listens, info.Listen) {
		self.Listens = append(self.Listens, info.Listen)
	}
	return self
}

// writeEntry adds or updates the hub's entry in the client's file and,
// with move, removes the entries the hub serves. The file is read, edited,
// checked and replaced in one go; if it changes meanwhile (a client that
// rewrites its own file), the whole edit starts over.
func (a *app) writeEntry(c clientKind, file, name string, e entry, reg *registry.Registry, move bool, profile string) (connectResult, error) {
	res := connectResult{Client: c.name, File: file, title: c.title, entry: name, Removed: []removedEntry{}, Kept: []keptEntry{}}
	for attempt := 1; ; attempt++ {
		f, err := readClientFile(file)
		if err != nil {
			return res, err
		}
		doc, err := parseClientDoc(file, f.content(), c)
		if err != nil {
			return res, err
		}
		plan := movePlan{notes: map[string]string{}}
		if move {
			if plan, err = planMove(doc, reg, a.hubSelf(reg), name, profile); err != nil {
				return res, err
			}
		}
		out, action, err := editClientDoc(doc, name, e, &plan)
		if errors.Is(err, errNotEditable) {
			return res, err
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", file, err)
		}
		if err := verifyEdit(file, out, c, name, e, plan.remove); err != nil {
			return res, err
		}
		res.Removed, res.Kept = res.Removed[:0], res.Kept[:0]
		for _, k := range plan.keep {
			note := plan.notes[k.name]
			if note == "" {
				note = "the hub does not serve it (mcphub import " + file + " adds it)"
			}
			res.Kept = append(res.Kept, keptEntry{Name: k.name, Note: note})
		}
		if f.exists && bytes.Equal(out, f.content()) {
			return res, nil
		}
		backup, err := f.replace(f.withBOM(out), time.Now())
		if errors.Is(err, errChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", file, err)
		}
		res.Wrote, res.Backup = true, backup
		switch action {
		case setAdded:
			res.Added = name
		case setUpdated:
			res.Updated = name
		}
		for i, r := range plan.remove {
			res.Removed = append(res.Removed, removedEntry{Name: r.name, Reason: plan.why[i]})
		}
		if d, ok := doc.(*jsonDoc); ok && c.format == formatJSON && !d.strict {
			res.strict = true
		}
		return res, nil
	}
}

// editClientDoc sets the hub's entry and removes the planned entries. An
// entry that cannot be removed is moved from plan.remove to plan.keep,
// with a note saying why.
func editClientDoc(doc clientDoc, name string, e entry, plan *movePlan) ([]byte, setAction, error) {
	action, err := doc.set(name, e)
	if err != nil {
		return nil, action, err
	}
	var removed []clientEntry
	var why []string
	for i, r := range plan.remove {
		err := doc.remove(r.name)
		switch {
		case errors.Is(err, errNotEditable):
			plan.notes[r.name] = fmt.Sprintf("%s, but it is %v; remove it by hand", plan.why[i], err)
			plan.keep = append(plan.keep, r)
		case err != nil:
			return nil, action, err
		default:
			removed, why = append(removed, r), append(why, plan.why[i])
		}
	}
	plan.remove, plan.why = removed, why
	out, err := doc.bytes()
	return out, action, err
}

// verifyEdit parses the edited file again and checks that it holds the
// hub's entry as intended and none of the removed ones, before anything is
// written.
func verifyEdit(file string, out []byte, c clientKind, name string, want entry, removed []clientEntry) error {
	doc, err := parseClientDoc(file, out, c)
	if err != nil {
		return fmt.Errorf("the edited file would not parse, so it was not written: %w", err)
	}
	list, err := doc.entries()
	if err != nil {
		return err
	}
	var fields map[string]any
	raw, _ := marshalJSON(want)
	_ = json.Unmarshal(raw, &fields)
	w := entryOf(name, fields, false)
	ok := false
	for _, got := range list {
		if got.name == name {
			ok = got.command == w.command && slices.Equal(got.args, w.args) && got.url == w.url
		}
		if slices.ContainsFunc(removed, func(r clientEntry) bool { return r.name == got.name }) {
			return fmt.Errorf("%s: the edit left %q in place, so it was not written", file, got.name)
		}
	}
	if !ok {
		return fmt.Errorf("%s: the edit did not leave the entry %q as intended, so it was not written", file, name)
	}
	return nil
}

// clientFile is a client's config file as read from disk.
type clientFile struct {
	// path is the file edited: the given path, or the file a symlink
	// there points to (also when that file does not exist yet), so that
	// the link stays a link.
	path   string
	data   []byte
	exists bool
	mode   fs.FileMode
	// bom is set when the file starts with a UTF-8 byte order mark, which
	// is kept out of parsing and written back.
	bom bool
}

// utf8BOM is the byte order mark some Windows editors write at the start
// of a UTF-8 file.
var utf8BOM = []byte("\xef\xbb\xbf")

// maxLinks bounds a chain of symlinks followed by hand.
const maxLinks = 40

func readClientFile(path string) (*clientFile, error) {
	f := &clientFile{path: path, mode: 0o600}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		f.path = real
	} else if target, ok := danglingTarget(path); ok {
		f.path = target
	}
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f.data, err = os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	f.exists, f.mode, f.bom = true, info.Mode().Perm(), bytes.HasPrefix(f.data, utf8BOM)
	return f, nil
}

// danglingTarget follows a symlink (or a chain of them) whose final target
// does not exist yet, such as ~/.cursor/mcp.json pointing into a dotfiles
// directory, and returns that target, so that writing creates it instead
// of replacing the link.
func danglingTarget(path string) (string, bool) {
	p, linked := path, false
	for range maxLinks {
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return p, linked && errors.Is(err, fs.ErrNotExist)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p, linked = target, true
	}
	return "", false
}

// content is the file's text without its byte order mark.
func (f *clientFile) content() []byte { return bytes.TrimPrefix(f.data, utf8BOM) }

// withBOM puts the file's byte order mark, if it had one, back on out.
func (f *clientFile) withBOM(out []byte) []byte {
	if !f.bom {
		return out
	}
	return append(bytes.Clone(utf8BOM), out...)
}

// errChanged means the file changed while mcphub was editing it.
var errChanged = errors.New("the file changed while mcphub was editing it")

// replace writes data over the file atomically (a temporary file in the
// same directory, renamed over it), keeping the file's mode, after keeping
// a timestamped copy of the old file beside it. It returns the copy's path,
// "" for a new file. If the file changed since it was read it returns
// errChanged and changes nothing.
func (f *clientFile) replace(data []byte, now time.Time) (string, error) {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".mcphub-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(f.mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", f.path, err)
	}
	now2, err := readClientFile(f.path)
	if err != nil {
		return "", err
	}
	if now2.exists != f.exists || !bytes.Equal(now2.data, f.data) {
		return "", errChanged
	}
	backup := ""
	if f.exists {
		if backup, err = f.backup(now); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return "", fmt.Errorf("replace %s: %w", f.path, err)
	}
	return backup, nil
}

// backup copies the file as read to <file>.mcphub-backup-<UTC time>, with
// a counter when that name is taken, and the file's mode.
func (f *clientFile) backup(now time.Time) (string, error) {
	base := f.path + ".mcphub-backup-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		_, err = out.Write(f.data)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: too many backups named %s*", f.path, base)
}
