package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/internal/tokencount"
)

// TestTokensPrintCaps names each cap the tool count exceeds, and only
// those; a count within every cap names them all.
func TestTokensPrintCaps(t *testing.T) {
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
		rep := &tokencount.Report{Encoding: "o200k_base", Endpoint: "/mcp", Mode: "full",
			Total: tokencount.Total{Tools: tc.tools, Tokens: 10 * tc.tools}}
		rep.Full = rep.Total
		var out bytes.Buffer
		printTokensReport(&out, rep, false)
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
