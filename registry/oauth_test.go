package registry

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOAuthParse(t *testing.T) {
	reg := mustParse(t, `
[servers.tracker]
url = "https://mcp.tracker.example.com/mcp"
oauth = { client_id = "mcphub", client_secret = "${SECRET}", scopes = ["issues:read", "offline_access"], client_metadata_url = "https://mcphub.dev/client.json" }
`, envOf("SECRET", "s3cret"))
	o := reg.Server("tracker").OAuth
	if o == nil || o.ClientID != "mcphub" || o.ClientSecret != "s3cret" || o.RawClientSecret != "${SECRET}" ||
		!slices.Equal(o.Scopes, []string{"issues:read", "offline_access"}) || o.ClientMetadataURL != "https://mcphub.dev/client.json" {
		t.Fatalf("oauth = %+v", o)
	}
	if got := reg.Server("tracker").Vars(); !slices.Equal(got, []string{"SECRET"}) {
		t.Errorf("Vars = %q, want the client secret's variable", got)
	}
	if got := reg.SecretEnvNames(); !slices.Contains(got, "SECRET") {
		t.Errorf("SecretEnvNames = %q: a client secret is held back from inherit_env servers", got)
	}
	if s := reg.Server("tracker").String(); strings.Contains(s, "s3cret") {
		t.Errorf("String shows the client secret: %s", s)
	}
	other := mustParse(t, `
[servers.tracker]
url = "https://mcp.tracker.example.com/mcp"
oauth = { client_id = "other", client_secret = "${SECRET}", scopes = ["issues:read", "offline_access"], client_metadata_url = "https://mcphub.dev/client.json" }
`, envOf("SECRET", "s3cret"))
	if reg.Server("tracker").Hash() == other.Server("tracker").Hash() {
		t.Error("a new client id does not count as a change of the connection")
	}
}

func TestOAuthErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[servers.a]\ncommand = \"x\"\noauth = { client_id = \"c\" }\n", "hub.toml:3:1: servers.a.oauth: oauth applies only to remote servers (url)"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = \"c\"\n", "hub.toml:3:1: servers.a.oauth: must be a table"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = { client_secret = \"x\" }\n", "servers.a.oauth.client_secret: is set without client_id"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = { client_metadata_url = \"http://a.example/c.json\" }\n", "servers.a.oauth.client_metadata_url: must be an https URL with a path"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = { scopes = [\"a b\"] }\n", "servers.a.oauth.scopes: entry 1 is not a scope"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = { clientId = \"c\" }\n", "servers.a.oauth.clientId: unknown key; did you mean client_id?"},
		{"[servers.a]\nurl = \"https://a.example/mcp\"\noauth = { client_id = \"c\", client_secret = \"${NOPE}\" }\n", "${NOPE} is not set"},
	} {
		errs := parseErrors(t, tc.text, envOf())
		if !strings.Contains(errs.Error(), tc.want) {
			t.Errorf("%q:\n%v\nwant %q", tc.text, errs, tc.want)
		}
		if strings.Contains(errs.Error(), "s3cret") {
			t.Errorf("an error shows a secret: %v", errs)
		}
	}
}

// TestOAuthRoundTrip: an entry added with oauth settings is written as one
// inline table and reads back the same, the secret as ${VAR}.
func TestOAuthRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	spec := ServerSpec{Name: "tracker", URL: "https://mcp.tracker.example.com/mcp",
		OAuth: &OAuth{ClientID: "mcphub", RawClientSecret: "${SECRET}", Scopes: []string{"a", "b"}}}
	if err := AddServer(path, spec, false); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if want := `oauth = { client_id = "mcphub", client_secret = "${SECRET}", scopes = ["a", "b"] }`; !strings.Contains(got, want) {
		t.Fatalf("written:\n%s\nwant the line %s", got, want)
	}
	reg := mustParse(t, got, envOf("SECRET", "x"))
	if back := reg.Server("tracker").Spec(); back.OAuth == nil || back.OAuth.RawClientSecret != "${SECRET}" || back.OAuth.ClientID != "mcphub" {
		t.Errorf("Spec() = %+v", back.OAuth)
	}
}

func TestOAuthPrintsNoSecret(t *testing.T) {
	o := &OAuth{ClientID: "c", ClientSecret: "s3cret", RawClientSecret: "${S}", Scopes: []string{"a"}}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%v %+v %#v", *o, o, o), o.LogValue().String()} {
		if strings.Contains(s, "s3cret") || !strings.Contains(s, "client_id=c") {
			t.Errorf("printed as %q", s)
		}
	}
}
