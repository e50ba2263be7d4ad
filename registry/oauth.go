package registry

import (
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// OAuth is a remote server's sign-in settings, the oauth key of its entry:
// a client registered with the server's authorization server beforehand
// (ClientID, and ClientSecret for a confidential client), or a Client ID
// Metadata Document (ClientMetadataURL), and the scopes to ask for. An
// entry without it signs in with dynamic client registration when the
// server asks for sign-in.
type OAuth struct {
	ClientID string
	// ClientSecret is expanded (write "${VAR}"); RawClientSecret is as
	// written.
	ClientSecret, RawClientSecret string
	// Scopes replace the ones the server's challenge or metadata name.
	Scopes []string
	// ClientMetadataURL is an https URL with a path that serves the
	// client's metadata document; it is used as the client id where the
	// authorization server supports such documents.
	ClientMetadataURL string
}

var oauthKeys = []string{"client_id", "client_secret", "scopes", "client_metadata_url"}

// oauth reads a server's oauth table.
func (p *parser) oauth(t *table, s *Server) {
	v, ok := t.m["oauth"]
	if !ok {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.errf("oauth", `must be a table, like oauth = { client_id = "...", client_secret = "${SECRET}" }, not %s`, typeName(v))
		return
	}
	sub := &table{p: p, m: m, path: append(slices.Clone(t.path), "oauth"), server: t.server}
	sub.unknown(oauthKeys, map[string]string{"clientId": "client_id", "clientSecret": "client_secret", "scope": "scopes",
		"client_id_metadata_document": "client_metadata_url", "client_metadata_document": "client_metadata_url"})
	o := &OAuth{}
	sub.str("client_id", &o.ClientID)
	sub.str("client_secret", &o.RawClientSecret)
	sub.strs("scopes", &o.Scopes)
	sub.str("client_metadata_url", &o.ClientMetadataURL)
	if o.RawClientSecret != "" {
		o.ClientSecret = p.expandOne(sub, []string{"client_secret"}, o.RawClientSecret, s.Enabled)
		if o.ClientID == "" {
			sub.errf("client_secret", "is set without client_id; give the client id the authorization server issued with it")
		}
	}
	if u := o.ClientMetadataURL; u != "" {
		if pu, err := url.Parse(u); err != nil || pu.Scheme != "https" || pu.Host == "" || pu.Path == "" || pu.Path == "/" {
			sub.errf("client_metadata_url", "must be an https URL with a path, where the client's metadata document is served")
		}
	}
	for i, sc := range o.Scopes {
		if sc == "" || slices.ContainsFunc([]rune(sc), func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			sub.errf("scopes", "entry %d is not a scope; scopes are words of printable ASCII without spaces", i+1)
		}
	}
	s.OAuth = o
}

// String describes the settings with the client secret masked, so that
// printing them shows no secret.
func (o OAuth) String() string {
	s := "oauth{client_id=" + o.ClientID
	if o.ClientSecret != "" || o.RawClientSecret != "" {
		s += " client_secret=***"
	}
	if o.ClientMetadataURL != "" {
		s += " client_metadata_url=" + o.ClientMetadataURL
	}
	if len(o.Scopes) > 0 {
		s += " scopes=" + strings.Join(o.Scopes, ",")
	}
	return s + "}"
}

// GoString keeps %#v from printing the client secret.
func (o OAuth) GoString() string { return "registry.OAuth" + strings.TrimPrefix(o.String(), "oauth") }

// LogValue makes slog print the settings without the client secret.
func (o OAuth) LogValue() slog.Value { return slog.StringValue(o.String()) }
