package hubclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

// The text a terminal shows of what a running hub answers: mcphub status,
// list and sessions print these, so that every client of the hub shows its
// state in the same words. Each renderer writes what its --json twin
// holds, for a person.

// WriteStatus prints the hub's status for a person: the servers' table,
// the whole reason of a failed server whose last error the table cut, the
// profiles, the [hub] settings that wait for a restart, and the registry
// error when the file on disk does not load.
func WriteStatus(w io.Writer, st *api.Status) {
	fmt.Fprintf(w, "mcphub %s at %s, %d sessions\n\n", st.Version, st.URL, st.Sessions)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tPID\tPROTOCOL\tUPTIME\tTOOLS\tRESTARTS\tLAST ERROR")
	for _, s := range st.Servers {
		pid, uptime, protocol := "-", "-", "-"
		if s.PID > 0 {
			pid = fmt.Sprint(s.PID)
		}
		if len(s.Protocols) > 0 {
			protocol = strings.Join(s.Protocols, " + ")
		} else if s.Protocol != "" {
			protocol = s.Protocol
		}
		if s.UptimeSeconds > 0 {
			uptime = (time.Duration(s.UptimeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, s.State, pid, protocol, uptime, s.Tools, s.Restarts, termtext.OneLine(s.LastError, 80))
	}
	tw.Flush()
	// A failed server's whole reason, when the table had to cut it: it is
	// what the user needs to fix it (which variable, which line).
	for _, s := range st.Servers {
		if s.State != api.StateConnected && termtext.OneLine(s.LastError, 80) != termtext.OneLine(s.LastError, len(s.LastError)+1) {
			fmt.Fprintf(w, "\n%s: %s\n", s.Name, strings.ReplaceAll(strings.TrimSpace(s.LastError), "\n", "\n  "))
		}
	}
	writeProfiles(w, st)
	writeCluster(w, st.Cluster)
	if st.StoreError != "" {
		fmt.Fprintf(w, "\nthe store cannot be reached; new sessions are refused and events wait in memory until it is back:\n  %s\n", st.StoreError)
	}
	if len(st.NeedsRestart) > 0 {
		fmt.Fprintf(w, "\nhub.toml changed %s, which needs a restart to take effect; the hub keeps the one it started with (restart it: stop mcphub serve and start it again, or mcphub service stop && mcphub service start)\n",
			strings.Join(st.NeedsRestart, ", "))
	}
	if st.RegistryError != "" {
		fmt.Fprintf(w, "\nthe registry on disk does not load; the hub keeps running its last good registry:\n%s\n", st.RegistryError)
	}
}

// writeCluster prints a team hub's replicas, as the one asked sees them in
// the store: each one's address, state, age, last heartbeat, generation and
// sessions, and whether the live ones serve different registries.
func writeCluster(w io.Writer, c *api.ClusterStatus) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nteam hub: this is replica %s\n", c.Self)
	if c.Error != "" {
		fmt.Fprintf(w, "the replicas could not be read: %s\n", c.Error)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tSTATE\tADDRESS\tUP\tHEARTBEAT\tGENERATION\tSESSIONS\tREGISTRY")
	for _, r := range c.Replicas {
		state, name := "stopped", r.Name
		if r.Alive {
			state = "live"
		}
		if r.Self {
			name += " (this)"
		}
		up := (time.Duration(r.UpSeconds) * time.Second).String()
		beat := (time.Duration(r.HeartbeatAgeMS) * time.Millisecond).Round(100*time.Millisecond).String() + " ago"
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", name, state, r.Address, up, beat, r.Generation, r.Sessions, r.Registry)
	}
	tw.Flush()
	for _, server := range slices.Sorted(maps.Keys(c.Servers)) {
		fmt.Fprintf(w, "server %s runs once for the team, on replica %s\n", server, c.Servers[server])
	}
	if c.RegistriesDiffer {
		fmt.Fprintln(w, "the live replicas serve different registries (see REGISTRY): deploy the same hub.toml to each")
	}
}

// writeProfiles prints the hub's profiles, when it has any: a table (no
// tool counts for a profile with a problem, which keeps it from serving),
// then each such problem, and the names each profile could not expose as
// they are.
func writeProfiles(w io.Writer, st *api.Status) {
	if len(st.Profiles) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tMODE\tSERVERS\tLISTED\tTOOLS\tSESSIONS\tURL")
	for _, p := range st.Profiles {
		servers := "-"
		if len(p.Servers) > 0 {
			servers = termtext.OneLine(strings.Join(p.Servers, ","), 40)
		}
		listed, tools := fmt.Sprint(p.Listed), fmt.Sprint(p.Tools)
		if p.Problem != "" {
			listed, tools = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Mode, servers, listed, tools, p.Sessions, p.URL)
	}
	tw.Flush()
	for _, p := range st.Profiles {
		if p.Problem != "" {
			fmt.Fprintf(w, "\nprofile %s serves nothing until its table is fixed:\n  %s\n", p.Name, strings.ReplaceAll(strings.TrimSpace(p.Problem), "\n", "\n  "))
		}
	}
	conflicts := false
	for _, p := range st.Profiles {
		if len(p.Conflicts) == 0 {
			continue
		}
		if !conflicts {
			fmt.Fprintln(w)
			conflicts = true
		}
		fmt.Fprintf(w, "profile %s: names not exposed as offered: %s\n", p.Name, strings.Join(p.Conflicts, "; "))
	}
}

// WriteSessions prints the hub's client sessions as a table, or says that
// there are none.
func WriteSessions(w io.Writer, list []api.SessionInfo) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no sessions")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENDPOINT\tCLIENT\tPROTOCOL\tAGE\tIDLE\tSTREAMS\tEVENTS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%d\t%d\n", s.ID, s.Endpoint, s.Client, s.ClientVersion, s.Protocol,
			time.Duration(s.AgeSeconds)*time.Second, time.Duration(s.IdleSeconds)*time.Second, s.OpenStreams, s.StoredEvents)
	}
	return tw.Flush()
}

// ListEntry is one server of the registry as mcphub list shows it, with
// the running hub's view of it; it is also its --json form. Env and
// header values are never part of it.
type ListEntry struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	EnvKeys   []string `json:"env_keys,omitempty"`
	URL       string   `json:"url,omitempty"`
	Transport string   `json:"transport,omitempty"`
	Enabled   bool     `json:"enabled"`
	Prefix    string   `json:"prefix"`
	Share     string   `json:"share"`
	Protocol  string   `json:"protocol"`
	// Problem says why the hub cannot serve the entry as written (an unset
	// ${VAR}, say), with file:line and the fix; the hub shows it failed.
	Problem string `json:"problem,omitempty"`
	// Live is the running hub's view, absent when no hub runs.
	Live *api.ServerStatus `json:"live,omitempty"`
	// HubError says why the hub could not be asked (it refused the
	// token, a TLS mismatch, not mcphub's answer); absent when it answered
	// or none runs. It is the same sentence for every entry, and holds no
	// secret.
	HubError string `json:"hub_error,omitempty"`
}

// ListEntries are the registry's servers, each with the running hub's
// view of it from st (nil when no hub runs). A remote server's URL has its
// secrets masked; of a stdio server's env only the keys are kept.
func ListEntries(reg *registry.Registry, st *api.Status) []ListEntry {
	live := map[string]*api.ServerStatus{}
	if st != nil {
		for i := range st.Servers {
			live[st.Servers[i].Name] = &st.Servers[i]
		}
	}
	entries := make([]ListEntry, 0, len(reg.Servers))
	for _, s := range reg.Servers {
		e := ListEntry{Name: s.Name, Kind: string(s.Kind()), Enabled: s.Enabled, Prefix: s.Prefix, Share: s.Share, Protocol: s.Protocol, Problem: s.Problem, Live: live[s.Name]}
		if s.Kind() == registry.KindRemote {
			e.URL, e.Transport = redact.URL(s.URL), s.Transport
		} else {
			e.Command, e.Args = s.Command, s.Args
			for k := range s.Env {
				e.EnvKeys = append(e.EnvKeys, k)
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// writeList prints the servers of the registry at config for a person:
// a table (with the live state and tools when live), the problems that
// keep a server from being served as written, and the names a server
// could not expose as they are.
func writeList(w io.Writer, config string, entries []ListEntry, live bool) {
	if len(entries) == 0 {
		fmt.Fprintf(w, "no servers in %s; add one with: mcphub add NAME -- COMMAND [ARGS...]\n", config)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NAME\tKIND\tCOMMAND / URL\tENABLED\tPREFIX"
	if live {
		header += "\tSTATE\tTOOLS"
	}
	fmt.Fprintln(tw, header)
	for _, e := range entries {
		fmt.Fprintln(tw, e.row(live))
	}
	tw.Flush()
	for _, e := range entries {
		if e.Problem != "" {
			fmt.Fprintf(w, "%s cannot be served as written:\n  %s\n", e.Name, strings.ReplaceAll(e.Problem, "\n", "\n  "))
		}
		if e.Live != nil && len(e.Live.Conflicts) > 0 {
			fmt.Fprintf(w, "%s: names not exposed as offered: %s\n", e.Name, strings.Join(e.Live.Conflicts, "; "))
		}
	}
}

// row is the entry's line of the list's table, its cells tab-separated.
func (e ListEntry) row(live bool) string {
	target := e.URL
	if e.Kind == string(registry.KindStdio) {
		target = strings.Join(append([]string{e.Command}, e.Args...), " ")
	}
	prefix := e.Prefix
	if prefix == "" {
		prefix = "(none)"
	}
	line := fmt.Sprintf("%s\t%s\t%s\t%v\t%s", e.Name, e.Kind, termtext.OneLine(target, 60), e.Enabled, prefix)
	if !live {
		return line
	}
	state, tools := "-", "-"
	if e.Live != nil {
		state, tools = e.Live.State, strconv.Itoa(e.Live.Tools)
		if e.Live.LastError != "" && e.Live.State != api.StateConnected {
			state += ": " + termtext.OneLine(e.Live.LastError, 80)
		}
	}
	return line + "\t" + state + "\t" + tools
}

// ServerList is what mcphub list shows: the registry's servers with the
// running hub's view of them, or why the hub could not be asked.
type ServerList struct {
	// Listen is where the hub was asked.
	Listen  string
	Entries []ListEntry
	// Status is the hub's answer, nil when none answered.
	Status *api.Status
	// HubError says why a hub that runs could not be asked; it is set on
	// every entry too.
	HubError string
}

// ListServers asks the hub of reg, found as l finds it, for its status and
// lists reg's servers with it. A note on warn says when the hub holding
// the data directory serves another registry, and why a hub that runs
// could not be asked.
func (l Locator) ListServers(ctx context.Context, reg *registry.Registry, warn io.Writer) ServerList {
	tok, _ := Token(reg)
	t := l.For(reg, tok)
	st, err := t.Status(ctx)
	l.NoteServed(warn, t)
	sl := ServerList{Listen: t.Listen, Entries: ListEntries(reg, st), Status: st}
	if err != nil && !errors.Is(err, ErrNoHub) {
		sl.HubError = fmt.Sprintf("could not ask the hub at %s: %v", t.Listen, err)
		fmt.Fprintln(warn, sl.HubError)
		for i := range sl.Entries {
			sl.Entries[i].HubError = sl.HubError
		}
	}
	return sl
}

// WriteText prints the list for a person (see writeList), and under it
// what the hub is doing: running (and the registry error it keeps running
// despite), not running, or not answering (the reason went to stderr).
func (sl ServerList) WriteText(w io.Writer, config string) {
	writeList(w, config, sl.Entries, sl.Status != nil)
	switch st := sl.Status; {
	case st != nil:
		fmt.Fprintf(w, "\nhub running at %s with %d sessions\n", st.URL, st.Sessions)
		if st.RegistryError != "" {
			fmt.Fprintf(w, "the hub keeps its last good registry; the file has errors:\n%s\n", st.RegistryError)
		}
	case sl.HubError == "":
		fmt.Fprintf(w, "\nno hub running at %s (start one with: mcphub serve)\n", sl.Listen)
	default:
		fmt.Fprintf(w, "\nthe hub at %s could not be asked (the reason is on stderr)\n", sl.Listen)
	}
}
