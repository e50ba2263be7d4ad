package hub

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

const accessRegistry = `
[servers.alpha]
command = "alpha"
[servers.beta]
command = "beta"
[profiles.eng]
servers = ["alpha"]
[profiles.picky]
servers = ["beta"]
include = ["beta__read*"]
[profiles.both]
servers = ["alpha", "beta"]
`

// permit serves a limited caller only its profiles: /mcp is its one
// profile, a profile's endpoint needs the profile, a server's own endpoint
// a profile that passes the whole server.
func TestPermit(t *testing.T) {
	reg := parseRegistry(t, accessRegistry)
	one := Caller{ID: "key:ci", Limited: true, Profiles: []string{"eng"}}
	two := Caller{ID: "key:ops", Limited: true, Profiles: []string{"eng", "picky"}}
	none := Caller{ID: "user:x", Limited: true}
	for _, tt := range []struct {
		name     string
		c        Caller
		endpoint string
		want     string // the endpoint served, or a piece of the refusal
		refused  bool
	}{
		{"unlimited keeps /mcp", Caller{ID: "token"}, "", "", false},
		{"unlimited keeps a server", Caller{ID: "token"}, "beta", "beta", false},
		{"one profile is /mcp", one, "", "profiles/eng", false},
		{"its profile", one, "profiles/eng", "profiles/eng", false},
		{"another profile", one, "profiles/both", "may not use profile both; it may use /profiles/eng/mcp", true},
		{"a server its profile passes whole", one, "alpha", "alpha", false},
		{"a server outside it", one, "beta", "may not use /beta/mcp", true},
		{"a server its profile filters", two, "beta", "none of its profiles passes all of beta's tools", true},
		{"two profiles: no /mcp", two, "", "may not use /mcp, which serves every server; it may use /profiles/eng/mcp, /profiles/picky/mcp", true},
		{"no profile at all", none, "profiles/eng", "it may use no profile", true},
	} {
		got, err := permit(reg, tt.c, tt.endpoint)
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.c.ID)):
			t.Errorf("%s: %q, %v; want a refusal naming the caller and saying %q", tt.name, got, err, tt.want)
		case !tt.refused && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// fakeAccess answers Identify from a table of credentials.
type fakeAccess struct{ callers map[string]Caller }

type fakeRefusal struct{}

func (fakeRefusal) Error() string     { return "unknown credential" }
func (fakeRefusal) Challenge() string { return `Bearer resource_metadata="http://hub/.well-known/oauth-protected-resource/mcp"` }

type fakeForbidden struct{}

func (fakeForbidden) Error() string   { return "in no group" }
func (fakeForbidden) Forbidden() bool { return true }

func (f *fakeAccess) Identify(_ *http.Request, bearer string) (Caller, error) {
	switch bearer {
	case "grouped-out":
		return Caller{}, fakeForbidden{}
	case "store-down":
		return Caller{}, errors.New("read API key: connection refused")
	}
	if c, ok := f.callers[bearer]; ok {
		return c, nil
	}
	return Caller{}, fakeRefusal{}
}

func (f *fakeAccess) Challenge(*http.Request) string { return fakeRefusal{}.Challenge() }

func (f *fakeAccess) Metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metadata of "+r.URL.Path) })
}

// The edge asks Access about every credential that is not the hub's
// token and maps its answers: 401 with its challenge, 403, 503; the
// metadata routes need no credential; the hub's token still opens all.
func TestEdgeAccess(t *testing.T) {
	th := startHub(t, accessRegistry, nil, func(o *Options) {
		o.Token = "s3cret"
		o.Access = &fakeAccess{callers: map[string]Caller{"good-key": {ID: "key:ci", Limited: true, Profiles: []string{"eng"}}}}
	})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(path, auth string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, th.srv.URL+path, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tt := range []struct {
		name, path, auth string
		status           int
		body, challenge  string
	}{
		{"no credential", "/mcp", "", 401, "unknown credential", "resource_metadata="},
		{"unknown credential", "/mcp", "Bearer nope", 401, "unknown credential", "resource_metadata="},
		{"in no group", "/mcp", "Bearer grouped-out", 403, "in no group", ""},
		{"store down", "/mcp", "Bearer store-down", 503, "could not check", ""},
		{"the token", "/mcp", "Bearer s3cret", 200, "", ""},
		{"a key on its profile", "/mcp", "Bearer good-key", 200, "", ""},
		{"a key elsewhere", "/beta/mcp", "Bearer good-key", 403, "may not use /beta/mcp", ""},
	} {
		resp, body := post(tt.path, tt.auth)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tt.challenge) {
			t.Errorf("%s: HTTP %d %q (WWW-Authenticate %q); want %d with %q", tt.name, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"), tt.status, tt.body)
		}
	}
	resp, err := http.Get(th.srv.URL + "/.well-known/oauth-protected-resource/profiles/eng/mcp")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "metadata of /.well-known/oauth-protected-resource/profiles/eng/mcp" {
		t.Errorf("metadata without a credential: HTTP %d %q", resp.StatusCode, b)
	}
}
