package hubclient_test

import (
	"os"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
)

// A command prints the status the hub answered as mcphub status does; its
// --json twin prints the api.Status itself.
func ExampleWriteStatus() {
	hubclient.WriteStatus(os.Stdout, &api.Status{Version: "v1.2.0", URL: "http://127.0.0.1:7733/mcp", Sessions: 1,
		Servers: []api.ServerStatus{
			{Name: "github", State: api.StateConnected, PID: 4242, Protocol: "2025-06-18", UptimeSeconds: 90, Tools: 12, Restarts: 1, LastError: "EOF"},
			{Name: "notes", State: api.StateDisabled},
		}})
	// Output:
	// mcphub v1.2.0 at http://127.0.0.1:7733/mcp, 1 sessions
	//
	// SERVER  STATE      PID   PROTOCOL    UPTIME  TOOLS  RESTARTS  LAST ERROR
	// github  connected  4242  2025-06-18  1m30s   12     1         EOF
	// notes   disabled   -     -           -       0      0
}
