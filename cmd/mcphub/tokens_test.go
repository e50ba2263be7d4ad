package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
)

// tokensEntry is a tools/list entry as a server sends it, compact.
const tokensEntry = `{"name":"weather__forecast","title":"Forecast","description":"Returns tomorrow's forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"the city, in English"}},"required":["city"]},"annotations":{"readOnlyHint":true}}`

// TestTokensCount counts a known entry with o200k_base and cl100k_base:
// the counts were computed once with the tokenizer, and indentation of the
// entry does not change them.
func TestTokensCount(t *testing.T) {
	for _, tc := range []struct {
		encoding string
		want     int
	}{
		{"o200k_base", 58},
		{"cl100k_base", 57},
	} {
		t.Run(tc.encoding, func(t *testing.T) {
			c, err := tokenCounterOf(tc.encoding)
			if err != nil {
				t.Fatal(err)
			}
			if c.encoding() != tc.encoding {
				t.Errorf("encoding %q, want %q", c.encoding(), tc.encoding)
			}
			got, err := c.count(json.RawMessage(tokensEntry))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("the entry counts %d tokens, want %d", got, tc.want)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, []byte(tokensEntry), "", "    "); err != nil {
				t.Fatal(err)
			}
			if got, err := c.count(indented.Bytes()); err != nil || got != tc.want {
				t.Errorf("the indented entry counts %d tokens (%v), want %d as compact", got, err, tc.want)
			}
			// The indentation would cost tokens of its own if it were counted.
			if raw, err := c.codec.Count(indented.String()); err != nil || raw <= tc.want {
				t.Errorf("the indented text counts %d tokens (%v), want more than %d", raw, err, tc.want)
			}
		})
	}
}

// tokenCounterOf is the counter tokens makes for encoding.
func tokenCounterOf(encoding string) (*tokenCounter, error) {
	e, err := findTokenEncoding(encoding)
	if err != nil {
		return nil, err
	}
	return &tokenCounter{codec: e.codec()}, nil
}

// TestTokensCountRefuses refuses an encoding it does not offer, and an
// entry that is not JSON.
func TestTokensCountRefuses(t *testing.T) {
	_, err := findTokenEncoding("p50k_base")
	if err == nil || err.Error() != `--encoding must be o200k_base or cl100k_base, not "p50k_base"` {
		t.Errorf("p50k_base: %v", err)
	}
	c, err := tokenCounterOf("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.count(json.RawMessage(`{"name":`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("broken JSON: %v", err)
	}
}

// TestTokensOwners tells the merged names apart as the hub merges them:
// a prefixed server by prefix and separator, an unprefixed one by the
// names of its own endpoint, an earlier server first.
func TestTokensOwners(t *testing.T) {
	o := &toolOwners{sep: "__", servers: []toolOwner{
		{name: "github", prefix: "gh"},
		{name: "local", own: map[string]bool{"read_file": true, "gh__x": true, "notes__add": true}},
		{name: "notes", prefix: "notes"},
	}}
	for name, want := range map[string]string{
		"gh__create_issue": "github",
		"gh__x":            "github", // github comes first, and hides local's
		"read_file":        "local",
		"notes__add":       "local", // local comes first
		"notes__search":    "notes",
		"github__list":     unknownServer, // github's prefix is gh
		"gh__":             unknownServer,
		"write_file":       unknownServer,
	} {
		if got := o.serverOf(name); got != want {
			t.Errorf("%s is of %s, want %s", name, got, want)
		}
	}
	dot := &toolOwners{sep: ".", servers: []toolOwner{{name: "fs", prefix: "fs"}}}
	if got := dot.serverOf("fs.read"); got != "fs" {
		t.Errorf("fs.read with separator .: %s, want fs", got)
	}
	if got := dot.serverOf("fs__read"); got != unknownServer {
		t.Errorf("fs__read with separator .: %s, want %s", got, unknownServer)
	}
	var none *toolOwners
	if got := none.serverOf("gh__x"); got != unknownServer {
		t.Errorf("without a registry: %s, want %s", got, unknownServer)
	}
}

// TestTokensReport groups the entries of a prefixed and an unprefixed
// server, sorts servers and tools by tokens, and names the caps exceeded.
func TestTokensReport(t *testing.T) {
	c, err := tokenCounterOf("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	o := &toolOwners{sep: "__", servers: []toolOwner{
		{name: "notes", prefix: "notes"},
		{name: "weather", own: map[string]bool{"forecast": true}},
	}}
	entry := func(name, desc string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, desc))
	}
	long := strings.Repeat("Returns tomorrow's forecast for a city, hour by hour. ", 10)
	items := []json.RawMessage{entry("notes__add", "Adds a note."), entry("forecast", long), entry("notes__count", "Counts."), entry("stray", "")}
	rep, err := tokenReport(c, o, items)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Encoding != "o200k_base" || rep.Total.Tools != 4 {
		t.Errorf("encoding %s, %d tools", rep.Encoding, rep.Total.Tools)
	}
	sum := 0
	for _, item := range items {
		n, _ := c.count(item)
		sum += n
	}
	if rep.Total.Tokens != sum {
		t.Errorf("total %d tokens, want the sum of the entries' %d", rep.Total.Tokens, sum)
	}
	var servers []string
	for _, s := range rep.Servers {
		servers = append(servers, fmt.Sprintf("%s:%d", s.Name, s.Tools))
	}
	if want := []string{"weather:1", "notes:2", "?:1"}; !slices.Equal(servers, want) {
		t.Errorf("servers %v, want %v", servers, want)
	}
	for i := 1; i < len(rep.Tools); i++ {
		if rep.Tools[i].Tokens > rep.Tools[i-1].Tokens {
			t.Errorf("tools not sorted by tokens: %+v", rep.Tools)
		}
	}
	if rep.Tools[0].Name != "forecast" || rep.Tools[0].Server != "weather" {
		t.Errorf("the costliest tool is %+v, want forecast of weather", rep.Tools[0])
	}
	if rep.unknownTools() != 1 || len(rep.Exceeds) != 0 {
		t.Errorf("%d unknown tools, exceeds %v", rep.unknownTools(), rep.Exceeds)
	}
	var out bytes.Buffer
	rep.print(&out, false)
	if !strings.Contains(out.String(), "fits every known client's tool cap (Cursor about 40, Windsurf 100, VS Code Copilot 128 per request)\n") {
		t.Errorf("no caps line:\n%s", out.String())
	}
}

// TestTokensCaps names each cap the tool count exceeds, and only those.
func TestTokensCaps(t *testing.T) {
	c, err := tokenCounterOf("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tools int
		want  []string
	}{
		{40, nil},
		{41, []string{"exceeds Cursor's cap of about 40 tools (has 41)"}},
		{127, []string{"exceeds Cursor's cap of about 40 tools (has 127)", "exceeds Windsurf's cap of 100 tools (has 127)"}},
		{129, []string{"exceeds Cursor's cap of about 40 tools (has 129)", "exceeds Windsurf's cap of 100 tools (has 129)",
			"exceeds VS Code Copilot's cap of 128 tools per request (has 129)"}},
	} {
		items := make([]json.RawMessage, tc.tools)
		for i := range items {
			items[i] = json.RawMessage(fmt.Sprintf(`{"name":"s__t%d"}`, i))
		}
		rep, err := tokenReport(c, &toolOwners{sep: "__", servers: []toolOwner{{name: "s", prefix: "s"}}}, items)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Exceeds) != len(tc.want) {
			t.Errorf("%d tools exceed %v, want %d caps", tc.tools, rep.Exceeds, len(tc.want))
		}
		var out bytes.Buffer
		rep.print(&out, false)
		var got []string
		for line := range strings.Lines(out.String()) {
			if strings.HasPrefix(line, "exceeds ") {
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d tools: %q, want %q", tc.tools, got, tc.want)
		}
		if fits := strings.Contains(out.String(), "fits every"); fits != (len(tc.want) == 0) {
			t.Errorf("%d tools: fits line %v:\n%s", tc.tools, fits, out.String())
		}
	}
}

// TestTokensOwnersLongestPrefix gives a name to the server of the longest
// prefix that matches it, whatever the servers' order.
func TestTokensOwnersLongestPrefix(t *testing.T) {
	a, a_ := toolOwner{name: "a", prefix: "a"}, toolOwner{name: "a_", prefix: "a_"}
	for _, servers := range [][]toolOwner{{a, a_}, {a_, a}} {
		o := &toolOwners{sep: "__", servers: servers}
		for name, want := range map[string]string{"a___x": "a_", "a__x": "a", "a_x": unknownServer} {
			if got := o.serverOf(name); got != want {
				t.Errorf("%s with %s, %s first: %s, want %s", name, servers[0].name, servers[1].name, got, want)
			}
		}
	}
}

// TestTokensOwnersDown lets a server that is not connected claim a name
// only when no connected server does.
func TestTokensOwnersDown(t *testing.T) {
	o := &toolOwners{sep: "__", servers: []toolOwner{
		{name: "local", own: map[string]bool{"p__x": true}},
		{name: "p", prefix: "p", down: true},
		{name: "z", prefix: "p__y", down: true},
	}}
	for name, want := range map[string]string{
		"p__x":       "local", // the connected server's own name
		"p__y":       "p",     // p is the only candidate
		"p__y__more": "z",     // both down: the longer prefix
		"q__x":       unknownServer,
	} {
		if got := o.serverOf(name); got != want {
			t.Errorf("%s is of %s, want %s", name, got, want)
		}
	}
}

// TestTokensReportUnlisted gives the tools no server claims to the one
// unprefixed server that could not be listed, and keeps them under ? when
// there are two; a prefixed server that is down keeps its own names.
func TestTokensReportUnlisted(t *testing.T) {
	c, err := tokenCounterOf("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	items := []json.RawMessage{
		json.RawMessage(`{"name":"notes__add"}`),
		json.RawMessage(`{"name":"forecast"}`),
		json.RawMessage(`{"name":"alerts"}`),
	}
	servers := []toolOwner{{name: "notes", prefix: "notes", down: true}}
	for _, tc := range []struct {
		unlisted []unlistedServer
		want     map[string]string
	}{
		{[]unlistedServer{{"weather", "restarting"}},
			map[string]string{"notes__add": "notes", "forecast": "weather", "alerts": "weather"}},
		{[]unlistedServer{{"weather", "restarting"}, {"local", "needs-login"}},
			map[string]string{"notes__add": "notes", "forecast": unknownServer, "alerts": unknownServer}},
	} {
		rep, err := tokenReport(c, &toolOwners{sep: "__", servers: servers, unlisted: tc.unlisted}, items)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, tool := range rep.Tools {
			got[tool.Name] = tool.Server
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%d unlisted: %v, want %v", len(tc.unlisted), got, tc.want)
		}
		tools := 0
		for _, s := range rep.Servers {
			tools += s.Tools
		}
		if tools != 3 || rep.unknownTools() != countOf(tc.want, unknownServer) {
			t.Errorf("%d unlisted: servers %+v", len(tc.unlisted), rep.Servers)
		}
	}
}

// countOf counts the values of m equal to v.
func countOf(m map[string]string, v string) int {
	n := 0
	for _, x := range m {
		if x == v {
			n++
		}
	}
	return n
}

// TestTokensNoteUnknown says why tools are counted under ?: no registry
// file, unprefixed servers that could not be listed, or no server at all.
func TestTokensNoteUnknown(t *testing.T) {
	for _, tc := range []struct {
		owners *toolOwners
		want   string
	}{
		{nil, "note: without a registry file (/x/hub.toml does not exist) the 2 tools of the hub cannot be grouped by server, counted under ?; point --config at the hub's registry\n"},
		{&toolOwners{unlisted: []unlistedServer{{"weather", "restarting"}, {"local", "server local is failed"}}},
			"note: 2 tools of the hub, counted under ?, may be of the unprefixed servers whose tools could not be listed: weather (restarting), local (server local is failed)\n"},
		{&toolOwners{}, "note: no server of /x/hub.toml exposes 2 tools of the hub, counted under ?\n"},
	} {
		var errOut bytes.Buffer
		a := &app{configPath: "/x/hub.toml", stdout: io.Discard, stderr: &errOut}
		a.noteUnknownTools(tc.owners, 2)
		if errOut.String() != tc.want {
			t.Errorf("note %q, want %q", errOut.String(), tc.want)
		}
	}
}
