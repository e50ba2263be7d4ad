package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

// bearerChallenge is a WWW-Authenticate value as an OAuth-protected MCP
// server sends it (RFC 9728), after a Basic challenge the client must skip.
const bearerChallenge = `Basic realm="legacy", Bearer realm="realm-secret-1", error="invalid_token", ` +
	`resource_metadata="https://auth.example/.well-known/oauth-protected-resource/meta-secret-2", scope="read write"`

// TestAuthRequiredBearer checks that a 401 with a Bearer challenge, on
// either transport, becomes an AuthRequiredError with the challenge parsed,
// which errors.As also finds as an HTTPError 401, and whose text holds
// neither the body nor a value of the challenge.
func TestAuthRequiredBearer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("WWW-Authenticate", bearerChallenge)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_token","echo":"body-secret-3"}`)
	}))
	t.Cleanup(srv.Close)
	for _, transport := range []string{TransportAuto, TransportStreamableHTTP, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			c := New(Config{Name: "linear", URL: srv.URL + "/mcp", Transport: transport}, nil)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Start(ctx)
			var ae *AuthRequiredError
			if !errors.As(err, &ae) {
				t.Fatalf("Start: %v, want an AuthRequiredError", err)
			}
			want := AuthRequiredError{Method: ae.Method, URL: srv.URL + "/mcp", Status: 401, Scheme: "Bearer",
				Realm: "realm-secret-1", ResourceMetadata: "https://auth.example/.well-known/oauth-protected-resource/meta-secret-2",
				Scope: "read write", ErrorCode: "invalid_token"}
			if *ae != want {
				t.Errorf("AuthRequiredError = %+v, want %+v", *ae, want)
			}
			var he *HTTPError
			if !errors.As(err, &he) || he.Status != http.StatusUnauthorized || he.Body != "" {
				t.Errorf("errors.As HTTPError: %+v, want status 401 without a body", he)
			}
			if !strings.Contains(err.Error(), "HTTP 401") {
				t.Errorf("error %q does not name the status", err)
			}
			testkit.NoSecrets(t, "the error", err.Error(), "realm-secret-1", "meta-secret-2", "body-secret-3", "invalid_token", "read write")
		})
	}
}

// TestAuthWithoutBearerStaysHTTPError checks that a 401 without a Bearer
// challenge, and a 403 with one, stay plain HTTPErrors.
func TestAuthWithoutBearerStaysHTTPError(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		challenge string
	}{
		{"401 without a challenge", 401, ""},
		{"401 with a Basic challenge", 401, `Basic realm="x"`},
		{"403 with a Bearer challenge", 403, `Bearer error="insufficient_scope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.challenge != "" {
					w.Header().Set("WWW-Authenticate", tt.challenge)
				}
				w.WriteHeader(tt.status)
			}))
			t.Cleanup(srv.Close)
			c := New(Config{Name: "up", URL: srv.URL + "/mcp", Transport: TransportStreamableHTTP}, nil)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Start(ctx)
			var ae *AuthRequiredError
			var he *HTTPError
			if errors.As(err, &ae) || !errors.As(err, &he) || he.Status != tt.status {
				t.Errorf("Start: %v, want a plain HTTP %d", err, tt.status)
			}
		})
	}
}

// TestHealthHooks checks what a health check hears from a Streamable HTTP
// connection: OnActivity for what the server sends and accepts, and
// OnTransportError once the server is gone (its stream drops, a POST
// cannot be sent) and for a refusal that asks for sign-in.
func TestHealthHooks(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["login"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="r"`)
		w.WriteHeader(http.StatusUnauthorized)
	}
	var activity atomic.Int64
	trouble := make(chan error, 64)
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP,
		OnActivity: func() { activity.Add(1) },
		OnTransportError: func(err error) {
			select {
			case trouble <- err:
			default:
			}
		}}, nil)
	if activity.Load() == 0 {
		t.Errorf("no activity reported for the handshake")
	}
	before := activity.Load()
	if _, err := c.Call(context.Background(), "ping", nil); err != nil {
		t.Fatal(err)
	}
	if activity.Load() <= before {
		t.Errorf("no activity reported for an answered ping")
	}
	select {
	case err := <-trouble:
		t.Fatalf("transport trouble reported while all was well: %v", err)
	default:
	}

	_, err := callTool(context.Background(), c, "login", `{}`)
	var ae *AuthRequiredError
	if !errors.As(err, &ae) {
		t.Fatalf("call answered 401 Bearer: %v, want an AuthRequiredError", err)
	}
	if got := waitTrouble(t, trouble); !errors.As(got, &ae) {
		t.Errorf("reported %v for the refusal, want the AuthRequiredError", got)
	}

	waitFor(t, 5*time.Second, "the standalone stream to open", func() bool { return f.openGETs.Load() > 0 })
	f.srv.CloseClientConnections()
	f.srv.Close()
	waitTrouble(t, trouble) // the stream dropped
	if _, err := c.Call(context.Background(), "ping", nil); err == nil {
		t.Fatalf("a ping to a closed server succeeded")
	}
	for {
		// A POST that cannot be sent is reported too; stream reconnects
		// may be reported before it.
		got := waitTrouble(t, trouble)
		if strings.HasPrefix(got.Error(), "POST ") {
			break
		}
	}
}

// waitTrouble returns the next transport failure reported, failing the
// test when none comes.
func waitTrouble(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no transport failure was reported")
		return nil
	}
}
