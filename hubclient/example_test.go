package hubclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// A caller asks a hub for its status through a Target, and shows a refusal
// as the sentence the HubError holds.
func Example() {
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			json.NewEncoder(w).Encode(api.Status{Version: "v1.0.0",
				Servers: []api.ServerStatus{{Name: "github", State: api.StateConnected, Tools: 12}}})
			return
		}
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no such endpoint"}}`)
	}))
	defer hub.Close()

	t := hubclient.Target{Listen: strings.TrimPrefix(hub.URL, "http://")}
	st, err := t.Status(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range st.Servers {
		fmt.Printf("mcphub %s: %s is %s with %d tools\n", st.Version, s.Name, s.State, s.Tools)
	}
	_, err = t.Sessions(context.Background())
	fmt.Println(err)
	// Output:
	// mcphub v1.0.0: github is connected with 12 tools
	// the hub refused: no such endpoint
}

// A Locator prefers the address the live hub holding the data directory
// recorded in its run file (serve --listen, or port 0) to the registry's
// listen address, when that hub serves the same registry.
func ExampleLocator_For() {
	dir, _ := os.MkdirTemp("", "hubclient-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "hub.toml")
	data := filepath.Join(dir, "data")

	release, err := hubclient.LockDataDir(data, hubclient.RunInfo{PID: os.Getpid(), Listen: "127.0.0.1:40123", Config: config})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := &registry.Registry{Hub: registry.Hub{Listen: "127.0.0.1:7733"}}
	l := hubclient.Locator{ConfigPath: config, DataDir: data}
	fmt.Println(l.For(reg, "").URL("/mcp"))
	release()
	fmt.Println(l.For(reg, "").URL("/mcp"))
	// Output:
	// http://127.0.0.1:40123/mcp
	// http://127.0.0.1:7733/mcp
}

// Arguments typed as key=value pairs are read as the tool's input schema
// types them: a string as typed, a number as JSON, and a value of the
// wrong type is refused with a sentence.
func ExampleToolArguments() {
	schema := json.RawMessage(`{"type":"object","properties":{"zip":{"type":"string"},"limit":{"type":"integer"}}}`)
	args, err := hubclient.ToolArguments("", []string{"zip=01234", "limit=5"}, schema)
	fmt.Println(string(args), err)
	_, err = hubclient.ToolArguments("", []string{"limit=five"}, schema)
	fmt.Println(err)
	// Output:
	// {"limit":5,"zip":"01234"} <nil>
	// limit must be an integer, got five
}
