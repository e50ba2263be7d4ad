package main

import (
	"strings"
	"testing"
)

// TestProbeClientSecretFromEnv: --client-secret '${VAR}' reads the secret
// from the environment, and names the variable when it is unset.
func TestProbeClientSecretFromEnv(t *testing.T) {
	t.Setenv("PROBE_TEST_SECRET", "s3cret")
	f := probeFlags{clientID: "c", clientSecret: "${PROBE_TEST_SECRET}"}
	f.url = "https://mcp.example.com/mcp"
	cfg, err := f.config(nil)
	if err != nil || cfg.OAuth == nil || cfg.OAuth.ClientSecret != "s3cret" {
		t.Fatalf("config: %+v, %v", cfg.OAuth, err)
	}
	f.clientSecret = "${PROBE_TEST_UNSET}"
	if _, err := f.config(nil); err == nil || !strings.Contains(err.Error(), "${PROBE_TEST_UNSET}, which is not set") {
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
		err         string
	}{
		{calls: []string{"a", "b"}, args: []string{`{"x":1}`}, protocol: "auto"},
		{calls: []string{"a"}, args: []string{`{}`, `{}`}, protocol: "auto", err: "2 --args for 1 --call"},
		{calls: []string{"a"}, args: []string{`[1]`}, protocol: "auto", err: "must be a JSON object"},
		{protocol: "2026-07-28", version: "2026-07-28"},
		{protocol: "2025-06-18", version: "2025-06-18"},
		{protocol: "2027-01-01", err: "--protocol: \"2027-01-01\" is not a protocol revision"},
	} {
		f := probeFlags{calls: tt.calls, args: tt.args, protocol: tt.protocol}
		f.url = "http://127.0.0.1:1/mcp"
		cfg, err := f.config(nil)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%+v: %v, want %q", tt, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%+v: %v", tt, err)
		case tt.err == "" && cfg.ProtocolVersion != tt.version:
			t.Errorf("%+v: pinned to %q", tt, cfg.ProtocolVersion)
		}
	}
}
