package probe_test

import (
	"os"
	"testing"

	"github.com/mcphub/mcphub/demo"
)

// demoEnv, set in a child's environment, makes this test binary the demo
// MCP server on its stdio: a real stdio server to probe, without a build.
const demoEnv = "MCPHUB_PROBE_TEST_DEMO=1"

func TestMain(m *testing.M) {
	if os.Getenv("MCPHUB_PROBE_TEST_DEMO") == "1" {
		demo.Serve(os.Stdin, os.Stdout, "test")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// demoCommand is the command line that starts the demo server.
func demoCommand(t testing.TB) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}
