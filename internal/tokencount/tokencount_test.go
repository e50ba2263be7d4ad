package tokencount

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"

	"github.com/mcphub/mcphub/registry"
)

// tokensEntry is a tools/list entry as a server sends it, compact.
const tokensEntry = `{"name":"weather__forecast","title":"Forecast","description":"Returns tomorrow's forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"the city, in English"}},"required":["city"]},"annotations":{"readOnlyHint":true}}`

// TestCount counts a known entry with o200k_base and cl100k_base: the
// counts were computed once with the tokenizer, and indentation of the
// entry does not change them.
func TestCount(t *testing.T) {
	for _, tc := range []struct {
		encoding string
		want     int
	}{
		{"o200k_base", 58},
		{"cl100k_base", 57},
	} {
		t.Run(tc.encoding, func(t *testing.T) {
			c := counterOf(t, tc.encoding)
			if c.Encoding() != tc.encoding {
				t.Errorf("encoding %q, want %q", c.Encoding(), tc.encoding)
			}
			got, err := c.Count(json.RawMessage(tokensEntry))
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
			if got, err := c.Count(indented.Bytes()); err != nil || got != tc.want {
				t.Errorf("the indented entry counts %d tokens (%v), want %d as compact", got, err, tc.want)
			}
			// The indentation would cost tokens of its own if it were counted.
			if raw, err := c.codec.Count(indented.String()); err != nil || raw <= tc.want {
				t.Errorf("the indented text counts %d tokens (%v), want more than %d", raw, err, tc.want)
			}
		})
	}
}

// counterOf is a counter of encoding, which the test fails without.
func counterOf(t *testing.T, encoding string) *Counter {
	t.Helper()
	e, ok := LookupEncoding(encoding)
	if !ok {
		t.Fatalf("no encoding %s", encoding)
	}
	return e.NewCounter()
}

// TestCountRefuses refuses an encoding it does not offer, and an entry
// that is not JSON.
func TestCountRefuses(t *testing.T) {
	if _, ok := LookupEncoding("p50k_base"); ok {
		t.Error("p50k_base is offered")
	}
	if got, want := EncodingNames(), []string{"o200k_base", "cl100k_base"}; !slices.Equal(got, want) {
		t.Errorf("encodings %q, want %q, the default first", got, want)
	}
	c := counterOf(t, "o200k_base")
	if _, err := c.Count(json.RawMessage(`{"name":`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("broken JSON: %v", err)
	}
	if _, err := c.Report(&api.Catalog{Mode: "full", Listed: []json.RawMessage{json.RawMessage(`[1]`)}}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("an entry that is not an object: %v", err)
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
			cat.Tools = append(cat.Tools, api.CatalogTool{Server: s, Item: item})
		}
	}
	return cat
}

// TestReport groups the entries by the server the catalog names for each,
// sorts servers and tools by tokens, and names the caps exceeded.
func TestReport(t *testing.T) {
	c := counterOf(t, "o200k_base")
	entry := func(name, desc string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, desc))
	}
	long := strings.Repeat("Returns tomorrow's forecast for a city, hour by hour. ", 10)
	items := []json.RawMessage{entry("notes__add", "Adds a note."), entry("forecast", long), entry("notes__count", "Counts."), entry("stray", "")}
	rep, err := c.Report(catalogOf(items, map[string]string{"notes__add": "notes", "notes__count": "notes", "forecast": "weather"}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Encoding != "o200k_base" || rep.Total.Tools != 4 {
		t.Errorf("encoding %s, %d tools", rep.Encoding, rep.Total.Tools)
	}
	sum := 0
	for _, item := range items {
		n, _ := c.Count(item)
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
	if rep.UnknownTools() != 1 || len(rep.Exceeds) != 0 {
		t.Errorf("%d unknown tools, exceeds %v", rep.UnknownTools(), rep.Exceeds)
	}
}

// TestCaps names each cap the tool count exceeds, and only those.
func TestCaps(t *testing.T) {
	c := counterOf(t, "o200k_base")
	for _, tc := range []struct {
		tools int
		want  []CapExceed
	}{
		{40, nil},
		{41, []CapExceed{{"Cursor", 40}}},
		{127, []CapExceed{{"Cursor", 40}, {"Windsurf", 100}}},
		{129, []CapExceed{{"Cursor", 40}, {"Windsurf", 100}, {"VS Code Copilot", 128}}},
	} {
		items := make([]json.RawMessage, tc.tools)
		servers := map[string]string{}
		for i := range items {
			items[i] = json.RawMessage(fmt.Sprintf(`{"name":"s__t%d"}`, i))
			servers[fmt.Sprintf("s__t%d", i)] = "s"
		}
		rep, err := c.Report(catalogOf(items, servers))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Exceeds, tc.want) {
			t.Errorf("%d tools exceed %v, want %v", tc.tools, rep.Exceeds, tc.want)
		}
	}
}

// TestCapWording: each cap reads as the warnings of tokens and connect
// name it.
func TestCapWording(t *testing.T) {
	var got []string
	for _, c := range ToolCaps {
		got = append(got, c.ID+": "+c.Wording(true)+" / "+c.Wording(false)+" / "+c.Does())
	}
	want := []string{
		"cursor: about 40 tools / about 40 / Cursor uses about the first 40",
		"windsurf: 100 tools / 100 / Windsurf takes at most 100",
		"vscode: 128 tools per request / 128 per request / VS Code Copilot refuses a request with more than 128",
	}
	if !slices.Equal(got, want) {
		t.Errorf("caps read\n%q\nwant\n%q", got, want)
	}
}

// TestCountOnce: a tool entry counted once is not tokenized again, so that
// a search profile's catalog, which repeats /mcp's, costs nothing more to
// count.
func TestCountOnce(t *testing.T) {
	counter := Encodings[0].NewCounter()
	item := json.RawMessage(`{"name":"a","description":"Adds a note."}`)
	cat := &api.Catalog{Endpoint: "/profiles/find/mcp", Mode: registry.ModeSearch,
		Listed: []json.RawMessage{json.RawMessage(`{"name":"search_tools"}`)},
		Tools:  []api.CatalogTool{{Server: "s", Item: item}, {Server: "t", Item: item}}}
	rep, err := counter.Report(cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(counter.counted) != 2 || rep.Full.Tools != 2 || rep.Full.Tokens != 2*rep.Tools[0].Tokens {
		t.Errorf("counted %d entries (want 2), full %+v, tools %+v", len(counter.counted), rep.Full, rep.Tools)
	}
	if len(rep.Listed) != 1 || rep.Listed[0].Name != "search_tools" || rep.Total.Tools != 1 {
		t.Errorf("listed %+v, total %+v, want search_tools alone", rep.Listed, rep.Total)
	}
}

// TestModeSearchIsRegistrys: the room names search mode as hub.toml does,
// without importing registry in production.
func TestModeSearchIsRegistrys(t *testing.T) {
	if modeSearch != registry.ModeSearch {
		t.Errorf("modeSearch %q, registry.ModeSearch %q", modeSearch, registry.ModeSearch)
	}
}
