package probe

import (
	"strings"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

// TestProbeClientSecretFromEnv: --client-secret '${VAR}' reads the secret
// from the environment, and names the variable when it is unset.
func TestProbeClientSecretFromEnv(t *testing.T) {
	t.Setenv("PROBE_TEST_SECRET", "s3cret")
	r := Request{ClientID: "c", ClientSecret: "${PROBE_TEST_SECRET}"}
	r.Target.URL = "https://mcp.example.com/mcp"
	p, err := r.Plan(nil)
	if err != nil || p.Config.OAuth == nil || p.Config.OAuth.ClientSecret != "s3cret" {
		t.Fatalf("plan: %+v, %v", p, err)
	}
	r.ClientSecret = "${PROBE_TEST_UNSET}"
	if _, err := r.Plan(nil); err == nil || !strings.Contains(err.Error(), "${PROBE_TEST_UNSET}, which is not set") {
		t.Errorf("an unset variable: %v", err)
	}
}

// TestProbeCallsAndProtocol: --call and --args pair by position, --args
// must be objects and no more than the calls, and --protocol takes auto or
// a revision.
func TestProbeCallsAndProtocol(t *testing.T) {
	for _, tt := range []struct {
		calls, args []string
		protocol    string
		version     string // what the connection is pinned to
		planned     []PlannedCall
		err         string
	}{
		{calls: []string{"a", "b"}, args: []string{`{"x":1}`}, protocol: "auto",
			planned: []PlannedCall{{"a", `{"x":1}`}, {"b", "{}"}}},
		{calls: []string{"a"}, args: []string{`{}`, `{}`}, protocol: "auto", err: "2 --args for 1 --call"},
		{calls: []string{"a"}, args: []string{`[1]`}, protocol: "auto", err: "must be a JSON object"},
		{protocol: "2026-07-28", version: "2026-07-28"},
		{protocol: "2025-06-18", version: "2025-06-18"},
		{protocol: "2027-01-01", err: "--protocol: \"2027-01-01\" is not a protocol revision"},
	} {
		r := Request{Calls: tt.calls, Args: tt.args, Protocol: tt.protocol}
		r.Target.URL = "http://127.0.0.1:1/mcp"
		p, err := r.Plan(nil)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%+v: %v, want %q", tt, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%+v: %v", tt, err)
		case tt.err == "" && p.Config.ProtocolVersion != tt.version:
			t.Errorf("%+v: pinned to %q", tt, p.Config.ProtocolVersion)
		case tt.err == "" && len(tt.planned) > 0 && !equalCalls(p.Calls, tt.planned):
			t.Errorf("%+v: calls %+v", tt, p.Calls)
		}
	}
}

func equalCalls(a, b []PlannedCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlanSignInNeedsURL: the sign-in flags refuse a stdio command, a
// secret needs its client id, and no sign-in flag means no OAuth.
func TestPlanSignInNeedsURL(t *testing.T) {
	if _, err := (Request{Save: "tracker", Target: registry.Target{Transport: "auto"}}).Plan([]string{"srv"}); err == nil || !strings.Contains(err.Error(), "give --url") {
		t.Errorf("--save with a command: %v", err)
	}
	r := Request{ClientSecret: "x", Target: registry.Target{URL: "https://mcp.example.com/mcp"}}
	if _, err := r.Plan(nil); err == nil || err.Error() != "--client-secret needs --client-id" {
		t.Errorf("a secret alone: %v", err)
	}
	p, err := (Request{Target: registry.Target{URL: "https://mcp.example.com/mcp", Transport: "auto"}}).Plan(nil)
	if err != nil || p.Config.OAuth != nil || p.Config.Name != "remote" {
		t.Errorf("no sign-in flag: %+v, %v", p, err)
	}
	p, err = (Request{Version: "1.2.3", Target: registry.Target{Transport: "auto"}}).Plan([]string{"srv", "--flag"})
	if err != nil || p.Config.Name != "srv" || p.Config.Command != "srv" || len(p.Config.Args) != 1 || p.Config.ClientInfo.Version != "1.2.3" {
		t.Errorf("a stdio command: %+v, %v", p, err)
	}
}
