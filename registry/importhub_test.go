package registry

import (
	"reflect"
	"testing"
)

func TestPointsAtHub(t *testing.T) {
	remote := func(u string) ServerSpec { return ServerSpec{URL: u} }
	stdio := func(cmd string, args ...string) ServerSpec { return ServerSpec{Command: cmd, Args: args} }
	for _, tc := range []struct {
		listen string
		spec   ServerSpec
		want   bool
	}{
		{"127.0.0.1:7733", remote("http://127.0.0.1:7733/mcp"), true},
		{"127.0.0.1:7733", remote("http://localhost:7733/github/mcp"), true},
		{"127.0.0.1:7733", remote("http://LOCALHOST:7733"), true},
		{"127.0.0.1:7733", remote("http://[::1]:7733/profiles/small/mcp"), true},
		{"127.0.0.1:7733", remote("https://localhost:7733/mcp"), true},
		{"localhost:7733", remote("http://127.0.0.1:7733/mcp"), true},
		{"[::1]:7733", remote("http://127.0.0.1:7733/mcp"), true},
		{"0.0.0.0:7733", remote("http://127.0.0.1:7733/mcp"), true},
		{"0.0.0.0:7733", remote("http://localhost:7733/x/mcp"), true},
		{"[::]:7733", remote("http://[::1]:7733/mcp"), true},
		{":8080", remote("http://localhost:8080/mcp"), true},
		{"10.0.0.5:80", remote("http://10.0.0.5/mcp"), true},
		{"127.0.0.1:443", remote("https://localhost/mcp"), true},
		{"127.0.0.1:7733", remote("http://127.0.0.1:7734/mcp"), false},
		{"127.0.0.1:7733", remote("http://example.com:7733/mcp"), false},
		{"127.0.0.1:7733", remote("http://127.0.0.2:7733/mcp"), false},
		{"127.0.0.1:7733", remote("http://127.0.0.1/mcp"), false},
		{"127.0.0.1:7733", remote("ftp://127.0.0.1:7733/mcp"), false},
		{"127.0.0.1:7733", remote("http://127.0.0.1:${PORT}/mcp"), false},
		{"10.0.0.5:7733", remote("http://127.0.0.1:7733/mcp"), false},
		{"not an address", remote("http://127.0.0.1:7733/mcp"), false},
		{"127.0.0.1:7733", stdio("mcphub", "stdio"), true},
		{"127.0.0.1:9999", stdio("/usr/local/bin/mcphub", "stdio", "--profile", "x"), true},
		{"127.0.0.1:7733", stdio(`C:\Tools\mcphub.exe`, "stdio"), true},
		{"127.0.0.1:7733", stdio(`C:\Tools\MCPHUB.EXE`, "stdio"), true},
		{"127.0.0.1:7733", stdio("npx", "-y", "mcp-remote", "http://localhost:7733/mcp"), true},
		{"127.0.0.1:7733", stdio("npx", "-y", "mcp-remote", "https://mcp.example.com/mcp"), false},
		{"127.0.0.1:7733", stdio("mcphub", "serve"), false},
		{"127.0.0.1:7733", stdio("mcphub"), false},
		{"127.0.0.1:7733", stdio("mcphub-helper", "stdio"), false},
		{"127.0.0.1:7733", stdio("npx", "mcphub", "stdio"), false},
	} {
		if got := PointsAtHub(tc.spec, tc.listen); got != tc.want {
			t.Errorf("PointsAtHub(%+v, %q) = %v, want %v", tc.spec, tc.listen, got, tc.want)
		}
	}
}

// TestImportSkipsTheHub: the entries `mcphub connect` writes, in every
// client's shape, are skipped with a note; the others are imported.
func TestImportSkipsTheHub(t *testing.T) {
	data := `{"mcpServers": {
	  "mcphub": {"type": "http", "url": "http://127.0.0.1:7733/mcp", "headers": {"Authorization": "Bearer ${MCPHUB_TOKEN}"}},
	  "hub-github": {"url": "http://localhost:7733/github/mcp"},
	  "hub-windsurf": {"serverUrl": "http://[::1]:7733/mcp"},
	  "hub-gemini": {"httpUrl": "http://127.0.0.1:7733/mcp"},
	  "hub-stdio": {"command": "/opt/bin/mcphub", "args": ["stdio"], "weird": 1},
	  "other-port": {"url": "http://127.0.0.1:8000/mcp"},
	  "files": {"command": "npx", "args": ["-y", "server-files"]}
	}}`
	res, err := ImportClientConfigWith([]byte(data), ImportOptions{HubListen: "0.0.0.0:7733"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Specs {
		names = append(names, s.Name)
	}
	if want := []string{"files", "other-port"}; !reflect.DeepEqual(names, want) {
		t.Errorf("imported %v, want %v", names, want)
	}
	if want := []string{"hub-gemini", "hub-github", "hub-stdio", "hub-windsurf", "mcphub"}; !reflect.DeepEqual(res.HubEntries, want) {
		t.Errorf("HubEntries = %v, want %v", res.HubEntries, want)
	}
	assertNotes(t, res.Notes, `skipped "mcphub": it points at this hub`, `skipped "hub-stdio": it points at this hub`)
	for _, n := range res.Notes {
		if n == `server "hub-stdio": field "weird" has no mcphub equivalent; ignored` {
			t.Errorf("a skipped hub entry must not get other notes: %q", n)
		}
	}
	// Without a listen address (ImportClientConfig), nothing is the hub.
	specs, _, err := ImportClientConfig([]byte(data))
	if err != nil || len(specs) != 7 {
		t.Fatalf("ImportClientConfig: %d specs, %v", len(specs), err)
	}
}
