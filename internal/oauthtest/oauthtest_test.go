package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestSignInByHand walks the flow a client goes through against the
// fakes: a 401 naming the metadata, registration, the authorization
// redirect read by Headless, the code exchange, then a request the
// resource lets through with the token.
func TestSignInByHand(t *testing.T) {
	as := NewAuthServer(t, "x")
	var served atomic.Int32
	res := NewResource(t, as, "/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		WriteJSON(w, http.StatusOK, map[string]any{})
	}))

	resp, err := http.Post(res.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	postJSON(t, as.Issuer()+"/register", `{"redirect_uris":["`+RedirectURL+`"],"grant_types":["authorization_code","refresh_token"]}`, &reg)

	verifier := "a-verifier-long-enough-for-the-test-0123456789"
	sum := sha256.Sum256([]byte(verifier))
	authURL := as.Issuer() + "/authorize?" + url.Values{"client_id": {reg.ClientID}, "redirect_uri": {RedirectURL},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {res.URL}, "state": {"st"}, "scope": {"mcp:read"}}.Encode()
	var fetches atomic.Int32
	got, err := Headless(&fetches)(context.Background(), &auth.AuthorizationArgs{URL: authURL})
	if err != nil || got.State != "st" || got.Iss != as.Issuer() || fetches.Load() != 1 {
		t.Fatalf("Headless: %+v, %v", got, err)
	}

	form := url.Values{"grant_type": {"authorization_code"}, "code": {got.Code}, "code_verifier": {verifier},
		"redirect_uri": {RedirectURL}, "resource": {res.URL}}
	req, _ := http.NewRequest(http.MethodPost, as.Issuer()+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(reg.ClientID, reg.ClientSecret)
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	do(t, req, &tok)
	if !as.Valid(tok.AccessToken) || tok.Scope != "mcp:read" {
		t.Fatalf("token %+v not valid", tok)
	}

	req, _ = http.NewRequest(http.MethodPost, res.URL, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	do(t, req, nil)
	if served.Load() != 1 || !res.SawBearer(tok.AccessToken) {
		t.Errorf("the request with the token was not served")
	}
	if r, a, f := as.Counts(); r != 1 || a != 1 || f != 0 {
		t.Errorf("counts %d %d %d, want 1 1 0", r, a, f)
	}
	as.Revoke()
	if as.Valid(tok.AccessToken) {
		t.Error("a revoked token is still valid")
	}
}

func postJSON(t *testing.T, u, body string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	do(t, req, v)
}

// do sends req, wants a 2xx answer and decodes it into v (unless nil).
func do(t *testing.T, req *http.Request, v any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
}
