package tokencount

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestWriteTextCaps names each cap the tool count exceeds, and only
// those; a count within every cap names them all.
func TestWriteTextCaps(t *testing.T) {
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
		rep := &Report{Encoding: "o200k_base", Endpoint: "/mcp", Mode: "full",
			Total: Total{Tools: tc.tools, Tokens: 10 * tc.tools}}
		rep.Full = rep.Total
		var out bytes.Buffer
		rep.WriteText(&out, false)
		var got []string
		for line := range strings.Lines(out.String()) {
			if strings.HasPrefix(line, "exceeds ") {
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d tools: %q, want %q", tc.tools, got, tc.want)
		}
		const fits = "fits every known client's tool cap (Cursor about 40, Windsurf 100, VS Code Copilot 128 per request)\n"
		if has := strings.Contains(out.String(), fits); has != (len(tc.want) == 0) {
			t.Errorf("%d tools: fits line %v:\n%s", tc.tools, has, out.String())
		}
	}
}

// TestSearchSaving: what search mode saves is rounded to the nearest
// percent; a difference under 1% either way costs about the same, and a
// search profile over few small tools says what it costs more rather than
// a negative saving.
func TestSearchSaving(t *testing.T) {
	tokensTotal := func(tools, tokens int) Total { return Total{Tools: tools, Tokens: tokens} }
	for _, tc := range []struct {
		listed, full Total
		want         string
	}{
		{tokensTotal(3, 244), tokensTotal(5, 275), "in full its 5 tools would cost 275 tokens; search mode saves 11%"},
		{tokensTotal(3, 240), tokensTotal(5, 275), "in full its 5 tools would cost 275 tokens; search mode saves 13%"},
		{tokensTotal(3, 244), tokensTotal(1, 68), "in full its 1 tool would cost 68 tokens; search mode costs 176 tokens more, as its tools are few"},
		{tokensTotal(3, 995), tokensTotal(200, 1000), "in full its 200 tools would cost 1000 tokens; search mode costs about the same"},
		{tokensTotal(3, 1009), tokensTotal(200, 1000), "in full its 200 tools would cost 1000 tokens; search mode costs about the same"},
		{tokensTotal(3, 100), tokensTotal(2, 100), "in full its 2 tools would cost 100 tokens; search mode costs about the same"},
		{tokensTotal(3, 990), tokensTotal(200, 1000), "in full its 200 tools would cost 1000 tokens; search mode saves 1%"},
		{tokensTotal(3, 101), tokensTotal(2, 100), "in full its 2 tools would cost 100 tokens; search mode costs 1 token more, as its tools are few"},
		{tokensTotal(3, 244), Total{}, "its servers offer no tools yet, so search mode finds none (see mcphub status)"},
	} {
		if got := searchSaving(tc.listed, tc.full); got != tc.want {
			t.Errorf("searchSaving(%v, %v) = %q, want %q", tc.listed, tc.full, got, tc.want)
		}
	}
}

// TestWriteTextProfileProblem: the profiles' table shows no counts for a
// profile whose table has a problem, as the hub serves nothing for it.
func TestWriteTextProfileProblem(t *testing.T) {
	rep := &Report{Encoding: "o200k_base", Endpoint: "/mcp", Mode: "full", Profiles: []ProfileCost{
		{Name: "broken", Endpoint: "/profiles/broken/mcp", Mode: "search", Problem: "hub.toml:3:1: profiles.broken.include: bad"},
		{Name: "ok", Endpoint: "/profiles/ok/mcp", Mode: "full", Total: Total{Tools: 2, Tokens: 90}, Full: Total{Tools: 2, Tokens: 90}},
	}}
	var out bytes.Buffer
	rep.WriteText(&out, false)
	for _, want := range []string{
		"broken   search      -       -              -               -\n",
		"ok       full        2      90              -               -\n",
		"profile broken serves nothing until its table is fixed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
