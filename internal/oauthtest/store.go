package oauthtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MemStore keeps grants in memory: it has the Load, Save and Delete of
// the oauth room's TokenStore, which the tests hand it as.
type MemStore struct {
	mu   sync.Mutex
	data map[string][]byte
}

// NewMemStore is an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{data: map[string][]byte{}} }

// Load returns a copy of what is stored under key, nil for nothing.
func (s *MemStore) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.data[key]), nil
}

// Save stores a copy of data under key.
func (s *MemStore) Save(key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = bytes.Clone(data)
	return nil
}

// Delete drops what is stored under key.
func (s *MemStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, key)
	return nil
}

// Headless completes the browser step as a headless client does: the
// authorization URL is fetched without following its redirect, whose
// query holds the code, state and iss. n counts the calls, so that a test
// can tell how many times its connection signed in.
func Headless(n *atomic.Int32) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		n.Add(1)
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			return nil, fmt.Errorf("authorization endpoint answered %d", resp.StatusCode)
		}
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}
