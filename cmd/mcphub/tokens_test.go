package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
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

// catalogOf is a full-mode catalog of /mcp listing items, each of the
// server servers names for it (none: not in the catalog's tools).
func catalogOf(items []json.RawMessage, servers map[string]string) *api.Catalog {
	cat := &api.Catalog{Endpoint: "/mcp", Mode: "full", Listed: items}
	for _, item := range items {
		var e struct{ Name string }
		json.Unmarshal(item, &e)
		if s, ok := servers[e.Name]; ok {
			cat.Tools = append(cat.Tools, api.CatalogTool{Server: s, Tool: e.Name, Item: item})
		}
	}
	return cat
}

// TestTokensReport groups the entries by the server the catalog names for
// each, sorts servers and tools by tokens, and names the caps exceeded.
func TestTokensReport(t *testing.T) {
	c, err := tokenCounterOf("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	entry := func(name, desc string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, desc))
	}
	long := strings.Repeat("Returns tomorrow's forecast for a city, hour by hour. ", 10)
	items := []json.RawMessage{entry("notes__add", "Adds a note."), entry("forecast", long), entry("notes__count", "Counts."), entry("stray", "")}
	rep, err := tokenReport(c, catalogOf(items, map[string]string{"notes__add": "notes", "notes__count": "notes", "forecast": "weather"}))
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
	if rep.Total.Tokens != sum || rep.Full != rep.Total {
		t.Errorf("total %d tokens, full %+v, want the sum of the entries' %d in both", rep.Total.Tokens, rep.Full, sum)
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
		servers := map[string]string{}
		for i := range items {
			servers[fmt.Sprintf("s__t%d", i)] = "s"
		}
		rep, err := tokenReport(c, catalogOf(items, servers))
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
