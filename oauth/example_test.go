package oauth_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcphub/mcphub/oauth"
)

// mapStore is a TokenStore in memory; mcphub keeps grants in the OS
// keychain (internal/keychain).
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *mapStore) Save(key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = data
	return nil
}

func (s *mapStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// A connection that cannot sign in (the hub's) sends its requests with
// the stored grant's token: New, Start, then the Authorizer's Transport.
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0k3n" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "hello, signed-in client")
	}))
	defer srv.Close()
	serverURL := srv.URL + "/mcp"

	// What an earlier sign-in (mcphub login) left in the store.
	store := &mapStore{m: map[string][]byte{}}
	g, _ := json.Marshal(oauth.Grant{ClientID: "mcphub", TokenURL: srv.URL + "/token",
		Token: &oauth2.Token{AccessToken: "t0k3n", TokenType: "Bearer"}})
	store.Save(oauth.CanonicalResource(serverURL), g)

	a, err := oauth.New(oauth.Options{URL: serverURL, Config: oauth.Config{Store: store}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	if err := a.Start(); err != nil {
		fmt.Println(err)
		return
	}
	hc := &http.Client{Transport: a.Transport()}
	resp, err := hc.Post(serverURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output: 200 OK hello, signed-in client
}

// A server's grant is stored under its canonical resource: the URL
// without user info, query, fragment, default port or trailing slash.
func ExampleCanonicalResource() {
	fmt.Println(oauth.CanonicalResource("HTTPS://Example.COM:443/mcp/?key=s3cret"))
	// Output: https://example.com/mcp
}

// A sign-in in the browser (mcphub login): the Loopback listener takes
// the authorization server's redirect, and its Fetch opens the browser.
// Grants go to the store only when the sign-in succeeds, through the
// tokenless view.
func ExampleListenLoopback() {
	si, err := oauth.ListenLoopback("tracker", os.Stderr, oauth.LoopbackPort)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer si.Close()
	view := oauth.Tokenless(&mapStore{m: map[string][]byte{}})
	a, err := oauth.New(oauth.Options{URL: "https://tracker.example/mcp",
		Config: oauth.Config{Store: view, Fetch: si.Fetch, RedirectURL: si.RedirectURL()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	// ... the connection's first request signs in; then:
	fmt.Println("signed in:", view.Saved())
}
