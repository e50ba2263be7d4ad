package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// refetchEvery is how often the provider's keys are fetched again at most
// for tokens no cached key verifies (a key the provider rotated in, or a
// forged token). A variable for tests.
var refetchEvery = 10 * time.Second

// fetchTimeout bounds one fetch of the provider's discovery document or
// keys.
const fetchTimeout = 10 * time.Second

// errNoKey is a token that none of the provider's keys verifies.
var errNoKey = errors.New("no key of the provider verifies the token")

// keySet is the provider's signing keys as go-oidc's verifier asks for
// them (an oidc.KeySet); go-jose parses and verifies. go-oidc's own remote
// key set fetches the keys again for every token it cannot verify, with
// no timeout and no pause: 50 forged tokens in a row made 35 fetches of
// the provider's keys, and one fetch that hangs holds up every check
// after it. This one fetches with a timeout, at most once per
// refetchEvery, and remembers whether its last fetch failed, so that a
// check it could not make is told apart from a wrong token.
type keySet struct {
	url    string
	client *http.Client
	ctx    context.Context // the gate's: fetches are shared by the checks waiting for them

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time // of the last fetch, good or not
	err     error     // of the last fetch
	group   singleflight.Group
}

func newKeySet(ctx context.Context, url string, client *http.Client) *keySet {
	return &keySet{ctx: ctx, url: url, client: client}
}

// VerifySignature returns the payload of a JWS one of the provider's keys
// verifies: a cached key, else one fetched again (see refetchEvery).
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, joseAlgs())
	if err != nil {
		return nil, err
	}
	if payload, ok := k.verify(jws); ok {
		return payload, nil
	}
	k.refetch(ctx)
	if payload, ok := k.verify(jws); ok {
		return payload, nil
	}
	return nil, errNoKey
}

// verify tries the cached keys the token's key id names (every key, when
// it names none).
func (k *keySet) verify(jws *jose.JSONWebSignature) ([]byte, bool) {
	if len(jws.Signatures) != 1 {
		return nil, false
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// refetch fetches the keys again unless the last fetch was less than
// refetchEvery ago; checks that ask meanwhile share one fetch.
func (k *keySet) refetch(ctx context.Context) {
	k.mu.Lock()
	recent := !k.fetched.IsZero() && time.Since(k.fetched) < refetchEvery
	k.mu.Unlock()
	if recent {
		return
	}
	done := k.group.DoChan("fetch", func() (any, error) {
		keys, err := k.fetch()
		k.mu.Lock()
		defer k.mu.Unlock()
		k.fetched, k.err = time.Now(), err
		if err == nil {
			k.keys = keys
		}
		return nil, err
	})
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// fetch reads the provider's JWKS.
func (k *keySet) fetch() ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(k.ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the identity provider's keys: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("fetch the identity provider's keys: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the identity provider's keys from %s: HTTP %d", k.url, resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the identity provider's keys at %s do not decode: %w", k.url, err)
	}
	return set.Keys, nil
}

// failed returns why the last fetch failed, nil when it did not.
func (k *keySet) failed() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

func joseAlgs() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}
