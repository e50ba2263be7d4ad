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
