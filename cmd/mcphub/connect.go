package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

const connectLong = `Print the configuration entry that points a client at this hub's /mcp
endpoint, including the Authorization header when [hub] auth = "token".
With --stdio (and always for Claude Desktop, which runs only stdio servers
from its file) the entry runs "mcphub stdio" by its absolute path instead.

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

--write adds or replaces only the hub's entry: comments, trailing commas,
the order of members and every other entry stay as they were. The old file
is kept beside it as FILE.mcphub-backup-<UTC time>. Running it again
changes nothing.

--move (with --write) also removes the entries the hub now serves (same
command and args, or same URL, as an enabled server in the registry), so
no server runs twice, and older entries that point at this hub under
another name. The others are kept and listed; mcphub import FILE
adds them to the hub.`

// connectOptions are mcphub connect's flags.
type connectOptions struct {
	write, stdio, move bool
	name, file         string
}

func newConnectCmd(a *app) *cobra.Command {
	var o connectOptions
	cmd := &cobra.Command{
		Use:       "connect CLIENT",
		Short:     "Print (or --write) the config that points a client at this hub",
		Long:      connectLong,
		Args:      cobra.ExactArgs(1),
		ValidArgs: clientNames(),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.connect(args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.write, "write", false, "add the entry to the client's config file (keeping a backup)")
	fl.BoolVar(&o.move, "move", false, "with --write: also remove the client's entries for servers the hub serves")
	fl.BoolVar(&o.stdio, "stdio", false, "write an entry that runs `mcphub stdio` instead of the HTTP one")
	fl.StringVar(&o.name, "name", "mcphub", "the entry's name in the client's config")
	fl.StringVar(&o.file, "file", "", "the client's config file, when it is not in the usual place")
	return cmd
}

func (a *app) connect(client string, o connectOptions) error {
	c, err := lookupClient(client)
	if err != nil {
		return err
	}
	if o.move && !o.write {
		return errors.New("--move changes the client's file, so it needs --write")
	}
	if o.name == "" {
		return errors.New("--name must not be empty")
	}
	reg, err := a.loadRegistry()
	if err != nil {
		return a.printRegistryErrors(err)
	}
	stdio := o.stdio || c.remote == nil
	var url, tok string
	var headers map[string]string
	if !stdio {
		if tok, err = hubToken(reg); err != nil {
			return err
		}
		url = targetOf(reg.Hub, tok).url("/mcp")
		if tok != "" {
			headers = map[string]string{"Authorization": "Bearer " + tok}
		}
	}
	e, err := a.hubEntry(c, stdio, url, headers)
	if err != nil {
		return err
	}
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
		return nil
	}
	if err := a.writeEntry(c, file, o.name, e, reg, o.move); err != nil {
		return err
	}
	if c.name == "vscode" && tok != "" {
		fmt.Fprintf(a.stdout, "note: %s now holds the hub's token; keep it out of version control\n", file)
	}
	return nil
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
	// remove are the entries to remove, each with the hub's server that
	// serves it.
	remove []clientEntry
	served []string
	// keep are the entries the hub does not serve.
	keep []clientEntry
}

// planMove sorts the client's entries into those the hub serves (and older
// entries pointing at the hub itself) and the rest. The hub's own entry,
// name, is neither.
func planMove(doc clientDoc, reg *registry.Registry, name string) (movePlan, error) {
	var p movePlan
	list, err := doc.entries()
	if err != nil {
		return p, err
	}
	for _, e := range list {
		if e.name == name {
			continue
		}
		if registry.PointsAtHub(registry.ServerSpec{Command: e.command, Args: e.args, URL: e.url}, registry.Self{Listens: []string{reg.Hub.Listen}, Config: reg.Path}) {
			// An older entry for this hub under another name: the client
			// would talk to the hub twice.
			p.remove, p.served = append(p.remove, e), append(p.served, "")
		} else if s := servedBy(reg, e); s != "" {
			p.remove, p.served = append(p.remove, e), append(p.served, s)
		} else {
			p.keep = append(p.keep, e)
		}
	}
	return p, nil
}

// servedBy returns the name of the enabled registry server that runs the
// same thing as e: the same command (by base name, without .cmd or .exe)
// and args, or the same URL (ignoring a trailing slash); "" when none does.
func servedBy(reg *registry.Registry, e clientEntry) string {
	for _, s := range reg.Servers {
		if !s.Enabled || s.Problem != "" {
			continue
		}
		switch {
		case e.command != "" && s.Command != "":
			if commandBase(e.command) == commandBase(s.Command) && slices.Equal(e.args, s.Args) {
				return s.Name
			}
		case e.command == "" && e.url != "" && s.URL != "":
			if strings.TrimSuffix(e.url, "/") == strings.TrimSuffix(s.URL, "/") {
				return s.Name
			}
		}
	}
	return ""
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

// writeEntry adds or replaces the hub's entry in the client's file and,
// with move, removes the entries the hub serves. The file is read, edited,
// checked and replaced in one go; if it changes meanwhile (a client that
// rewrites its own file), the whole edit starts over.
func (a *app) writeEntry(c clientKind, file, name string, e entry, reg *registry.Registry, move bool) error {
	for attempt := 1; ; attempt++ {
		f, err := readClientFile(file)
		if err != nil {
			return err
		}
		doc, err := parseClientDoc(file, f.data, c)
		if err != nil {
			return err
		}
		var plan movePlan
		if move {
			if plan, err = planMove(doc, reg, name); err != nil {
				return err
			}
		}
		out, notes, err := editClientDoc(doc, name, e, &plan)
		if errors.Is(err, errNotEditable) {
			fmt.Fprintf(a.stdout, "%s: the entry %q is %v; replace it by hand with:\n%s", file, name, err, snippet(c, name, e))
			return exitError{code: 1}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := verifyEdit(file, out, c, name, e, plan.remove); err != nil {
			return err
		}
		if f.exists && bytes.Equal(out, f.data) {
			fmt.Fprintf(a.stdout, "%s is already up to date\n", file)
			a.printKept(file, plan.keep, notes)
			return nil
		}
		backup, err := f.replace(out, time.Now())
		if errors.Is(err, errChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if backup != "" {
			fmt.Fprintf(a.stdout, "backed up %s to %s\n", file, backup)
		}
		for i, r := range plan.remove {
			if plan.served[i] == "" {
				fmt.Fprintf(a.stdout, "removed %q from %s (it points at this hub too; %q replaces it)\n", r.name, file, name)
				continue
			}
			fmt.Fprintf(a.stdout, "removed %q from %s (the hub serves it as %q)\n", r.name, file, plan.served[i])
		}
		fmt.Fprintf(a.stdout, "wrote server %q into %s\n", name, file)
		a.printKept(file, plan.keep, notes)
		if d, ok := doc.(*jsonDoc); ok && c.format == formatJSON && !d.strict {
			fmt.Fprintf(a.stdout, "note: %s has comments or trailing commas, which %s may not accept\n", file, c.title)
		}
		if c.name == "claude-desktop" || c.name == "claude" {
			fmt.Fprintf(a.stdout, "restart %s to load it\n", c.title)
		}
		return nil
	}
}

// editClientDoc sets the hub's entry and removes the planned entries. An
// entry that cannot be removed is moved from plan.remove to plan.keep,
// with a note saying why.
func editClientDoc(doc clientDoc, name string, e entry, plan *movePlan) ([]byte, map[string]string, error) {
	if err := doc.set(name, e); err != nil {
		return nil, nil, err
	}
	notes := map[string]string{}
	var removed []clientEntry
	var served []string
	for i, r := range plan.remove {
		err := doc.remove(r.name)
		switch {
		case errors.Is(err, errNotEditable):
			notes[r.name] = fmt.Sprintf("the hub serves it as %q, but it is %v; remove it by hand", plan.served[i], err)
			plan.keep = append(plan.keep, r)
		case err != nil:
			return nil, nil, err
		default:
			removed, served = append(removed, r), append(served, plan.served[i])
		}
	}
	plan.remove, plan.served = removed, served
	out, err := doc.bytes()
	return out, notes, err
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
	w := entryOf(name, fields)
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

// printKept lists the entries --move left in the file, and why.
func (a *app) printKept(file string, keep []clientEntry, notes map[string]string) {
	for _, k := range keep {
		why := notes[k.name]
		if why == "" {
			why = "the hub does not serve it (mcphub import " + file + " adds it)"
		}
		fmt.Fprintf(a.stdout, "kept %q in %s: %s\n", k.name, file, why)
	}
}

// clientFile is a client's config file as read from disk.
type clientFile struct {
	// path is the file edited: the given path, or the file a symlink
	// there points to, so that the link stays a link.
	path   string
	data   []byte
	exists bool
	mode   fs.FileMode
}

func readClientFile(path string) (*clientFile, error) {
	f := &clientFile{path: path, mode: 0o600}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		f.path = real
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
	f.exists, f.mode = true, info.Mode().Perm()
	return f, nil
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
