package oauth

import (
	"encoding/json"
	"sync"
)

// TokenlessStore is a view of a TokenStore without tokens, for a sign-in
// that asks the user again (mcphub login): the stored client registration
// is read (and presented again), a new grant is written, and nothing is
// deleted, so that a sign-in that fails leaves the stored grant, token
// and all, as it was.
type TokenlessStore struct {
	TokenStore
	mu    sync.Mutex
	token bool // a grant holding a token was written
}

// Tokenless is the view of s a new sign-in uses.
func Tokenless(s TokenStore) *TokenlessStore { return &TokenlessStore{TokenStore: s} }

// Saved reports whether the sign-in stored a token: whether it succeeded
// and the token could be kept.
func (t *TokenlessStore) Saved() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.token
}

// Save writes the grant to the store beneath and notes whether it holds
// a token.
func (t *TokenlessStore) Save(key string, data []byte) error {
	if err := t.TokenStore.Save(key, data); err != nil {
		return err
	}
	var g Grant
	if json.Unmarshal(data, &g) == nil && g.hasToken() {
		t.mu.Lock()
		t.token = true
		t.mu.Unlock()
	}
	return nil
}

// Delete deletes nothing: the stored grant stays until a new one
// replaces it.
func (t *TokenlessStore) Delete(string) error { return nil }

// Load reads the stored grant without its token; an unreadable one reads
// as none (the sign-in starts afresh, and replaces it).
func (t *TokenlessStore) Load(key string) ([]byte, error) {
	data, err := t.TokenStore.Load(key)
	if err != nil || data == nil {
		return data, err
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, nil
	}
	g.Token = nil
	return json.Marshal(&g)
}
