package registry

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const accessProfiles = `
[servers.alpha]
command = "alpha"
[profiles.eng]
servers = ["alpha"]
`

// [hub.oauth] and [hub.access] parse with their defaults, turn auth on,
// and each mistake is reported at its key with the fix.
func TestHubOAuthAndAccess(t *testing.T) {
	reg, err := Parse("hub.toml", []byte(`
[hub.oauth]
issuer = "https://idp.example.com"
scopes = ["mcp"]
[hub.access]
[hub.access.groups]
eng = ["eng"]
"*" = []
`+accessProfiles), envOf())
	if err != nil {
		t.Fatal(err)
	}
	o, a := reg.Hub.OAuth, reg.Hub.Access
	if reg.Hub.Auth != AuthToken || o == nil || o.Issuer != "https://idp.example.com" || o.ClockSkew != DefaultClockSkew || !slices.Equal(o.Scopes, []string{"mcp"}) {
		t.Fatalf("hub = auth %q, oauth %+v", reg.Hub.Auth, o)
	}
	if a == nil || a.Claim != DefaultAccessClaim || !slices.Equal(a.Groups["eng"], []string{"eng"}) || a.Groups["*"] == nil {
		t.Fatalf("access = %+v", a)
	}
	for _, tt := range []struct{ name, text, want string }{
		{"no issuer", "[hub.oauth]\naudience = \"x\"\n", "hub.oauth.issuer: is required"},
		{"plain http beyond loopback", "[hub.oauth]\nissuer = \"http://idp.example.com\"\n", "must be https (http only on loopback)"},
		{"http on loopback is fine, a bad url is not", "[hub.oauth]\nissuer = \"http://127.0.0.1:9/\"\nurl = \"nope\"\n", "hub.oauth.url: \"nope\" is not a URL"},
		{"auth none with sign-in", "[hub]\nauth = \"none\"\n[hub.oauth]\nissuer = \"https://idp.example.com\"\n", "hub.auth: is \"none\", but [hub.oauth]"},
		{"unknown key", "[hub.oauth]\nissuer = \"https://idp.example.com\"\naud = \"x\"\n", "did you mean audience?"},
		{"bad scope", "[hub.oauth]\nissuer = \"https://idp.example.com\"\nscopes = [\"a b\"]\n", "entry 1 is not a scope"},
		{"bad clock skew", "[hub.oauth]\nissuer = \"https://idp.example.com\"\nclock_skew = \"soon\"\n", "hub.oauth.clock_skew"},
		{"access without sign-in", "[hub.access]\nclaim = \"groups\"\n", "there is no [hub.oauth]"},
		{"unknown profile", "[hub.oauth]\nissuer = \"https://idp.example.com\"\n[hub.access.groups]\neng = [\"eng\", \"nope\"]\n", `entry 2 names no profile: "nope"`},
		{"groups not a table", "[hub.oauth]\nissuer = \"https://idp.example.com\"\n[hub.access]\ngroups = 3\n", "must be a table mapping each group"},
		{"clock skew over 5 minutes", "[hub.oauth]\nissuer = \"https://idp.example.com\"\nclock_skew = \"10m\"\n", "is more than 5m0s"},
		{"every interface without url", "[hub]\nlisten = \"0.0.0.0:7733\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n[hub.oauth]\nissuer = \"https://idp.example.com\"\n", "hub.oauth: [hub.oauth] needs url"},
	} {
		_, err := Parse("hub.toml", []byte(tt.text+accessProfiles), envOf())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want an error with %q", tt.name, err, tt.want)
		}
	}
	reg, err = Parse("hub.toml", []byte("[hub.oauth]\nissuer = \"http://localhost:9/\"\nclock_skew = \"0s\"\n"), envOf())
	if err != nil || reg.Hub.OAuth.ClockSkew != 0 || reg.Hub.OAuth.ClockSkew == time.Second {
		t.Errorf("clock_skew = \"0s\": %v, %v", err, reg.Hub.OAuth)
	}
}

// [hub.limits] and ParseRate: rates per second, minute and hour with a
// second's worth of burst, and each mistake at its key.
func TestHubLimits(t *testing.T) {
	reg, err := Parse("hub.toml", []byte("[hub.limits]\nrate = \"600/m\"\nconcurrent_calls = 4\n"), envOf())
	if err != nil {
		t.Fatal(err)
	}
	if l := reg.Hub.Limits; l.Rate.String() != "600/m" || l.Rate.PerSecond() != 10 || l.Rate.Burst != 10 || l.ConcurrentCalls != 4 {
		t.Fatalf("limits = %+v", l)
	}
	for in, burst := range map[string]int{"10/s": 10, "1/s": 1, "30/m": 1, "7200/h": 2} {
		r, err := ParseRate(in)
		if err != nil || r.Burst != burst || r.String() != in {
			t.Errorf("ParseRate(%q) = %+v, %v; want burst %d", in, r, err, burst)
		}
	}
	for _, bad := range []string{"", "10", "0/s", "-1/s", "10/d", "x/s", "10/ s", "2000000/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) took it", bad)
		}
	}
	for _, tt := range []struct{ text, want string }{
		{"[hub.limits]\nrate = \"fast\"\n", `hub.limits.rate: "fast" is not a rate`},
		{"[hub.limits]\nconcurrent_calls = 0\n", "hub.limits.concurrent_calls: must be a positive integer"},
		{"[hub.limits]\nconcurrency = 3\n", "did you mean concurrent_calls?"},
	} {
		if _, err := Parse("hub.toml", []byte(tt.text), envOf()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want %q", tt.text, err, tt.want)
		}
	}
}

// FuzzParseRate checks that ParseRate never panics and that what it takes
// it writes back the same way.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10/s", "600/m", "1/h", "0/s", "x", "99999999999999999999/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r || r.PerSecond() <= 0 || r.Burst < 1 {
			t.Fatalf("ParseRate(%q) = %+v; its String %q reads back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}
