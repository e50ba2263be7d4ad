package registry

import (
	"os"
	"path/filepath"
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
		if got := PointsAtHub(tc.spec, Self{Listens: []string{tc.listen}}); got != tc.want {
			t.Errorf("PointsAtHub(%+v, %q) = %v, want %v", tc.spec, tc.listen, got, tc.want)
		}
	}
}

// TestPointsAtHubForms: the hub is found behind mcp-remote with a version
// and flags, behind "mcphub" with global flags before stdio, and on every
// address it listens on; "mcphub stdio" on another registry is another
// hub.
func TestPointsAtHubForms(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "hub.toml")
	other := filepath.Join(dir, "other.toml")
	for _, p := range []string{own, other} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(own, link); err != nil {
		link = own
	}
	t.Setenv("MCPHUB_CONFIG", own) // the default registry is the hub's
	self := Self{Listens: []string{"127.0.0.1:7733", "", "127.0.0.1:9100"}, Config: own}
	stdio := func(cmd string, args ...string) ServerSpec { return ServerSpec{Command: cmd, Args: args} }
	for _, tc := range []struct {
		spec ServerSpec
		want bool
	}{
		{stdio("npx", "-y", "mcp-remote@latest", "http://127.0.0.1:7733/mcp"), true},
		{stdio("npx", "-y", "mcp-remote@1.2.3", "http://localhost:7733/github/mcp"), true},
		{stdio("npx", "-y", "mcp-remote@latest", "--transport", "http-only", "--allow-http", "http://127.0.0.1:7733/mcp"), true},
		{stdio("cmd", "/c", "npx", "mcp-remote", "http://[::1]:9100/mcp", "--header", "Authorization: Bearer ${T}"), true},
		{stdio("npx", "-y", "mcp-remote@latest", "https://mcp.example.com/mcp"), false},
		{stdio("npx", "-y", "mcp-remote-helper", "http://127.0.0.1:7733/mcp"), false},
		{ServerSpec{URL: "http://localhost:9100/mcp"}, true},
		{ServerSpec{URL: "http://localhost:9101/mcp"}, false},
		{stdio("mcphub", "stdio"), true},
		{stdio("mcphub", "--config", own, "stdio"), true},
		{stdio("mcphub", "--config="+own, "stdio", "--server", "github"), true},
		{stdio("mcphub", "stdio", "--config", link), true},
		{stdio("mcphub.exe", "--data-dir", filepath.Join(dir, "data"), "stdio", "--server", "s"), true},
		{stdio("/opt/mcphub", "--data-dir="+dir, "--config", own, "stdio"), true},
		{ServerSpec{Command: "mcphub", Args: []string{"--config", "hub.toml", "stdio"}, Cwd: dir}, true},
		{stdio("mcphub", "--config", other, "stdio"), false},
		{stdio("mcphub", "stdio", "--config="+other), false},
		{ServerSpec{Command: "mcphub", Args: []string{"stdio"}, Env: map[string]string{"MCPHUB_CONFIG": other}}, false},
		{ServerSpec{Command: "mcphub", Args: []string{"stdio"}, Env: map[string]string{"MCPHUB_CONFIG": own}}, true},
		{stdio("mcphub", "--config", "stdio"), false},
		{stdio("mcphub", "--config", own, "serve"), false},
		{stdio("mcphub", "--", "stdio"), false},
	} {
		if got := PointsAtHub(tc.spec, self); got != tc.want {
			t.Errorf("PointsAtHub(%+v) = %v, want %v", tc.spec, got, tc.want)
		}
	}
	// A hub on another registry: "mcphub stdio" without --config is the
	// default registry, which is not that hub's.
	if PointsAtHub(stdio("mcphub", "stdio"), Self{Listens: []string{"127.0.0.1:7733"}, Config: other}) {
		t.Errorf("mcphub stdio on the default registry is taken for a hub on %s", other)
	}
	// Listening on every interface, any loopback address reaches the hub.
	if !PointsAtHub(ServerSpec{URL: "http://127.0.0.2:7733/mcp"}, Self{Listens: []string{"0.0.0.0:7733"}}) {
		t.Errorf("127.0.0.2 does not reach a hub on 0.0.0.0")
	}
}
