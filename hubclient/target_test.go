package hubclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

// TestTargetURLAndAddresses: a hub listening on every interface is reached
// on loopback, and two addresses are the same listener when their ports
// match and their hosts do, or one is a wildcard, or both are loopback.
func TestTargetURLAndAddresses(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:7733": "http://127.0.0.1:7733/mcp",
		"0.0.0.0:7733":   "http://127.0.0.1:7733/mcp",
		":7733":          "http://127.0.0.1:7733/mcp",
		"[::]:7733":      "http://[::1]:7733/mcp",
	} {
		if got := (Target{Listen: listen}).URL("/mcp"); got != want {
			t.Errorf("URL of a hub at %s = %s, want %s", listen, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"127.0.0.1:7733", "localhost:7733", true},
		{"0.0.0.0:7733", "192.0.2.1:7733", true},
		{"127.0.0.1:7733", "127.0.0.1:7734", false},
		{"192.0.2.1:7733", "127.0.0.1:7733", false},
	} {
		if got := SameAddress(c.a, c.b); got != c.same {
			t.Errorf("SameAddress(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestOwnTargetKeepsTheTokenFromAnotherRegistrysHub: the hub of another
// registry never gets this registry's token when it listens at this
// registry's address, and the target says which registry it serves.
func TestOwnTargetKeepsTheTokenFromAnotherRegistrysHub(t *testing.T) {
	h := registry.Hub{Listen: "127.0.0.1:7733"}
	other := &RunInfo{Listen: "0.0.0.0:7733", Config: "/elsewhere/hub.toml"}
	got := OwnTarget(h, "secret", other)
	if got.Token != "" || got.Served != other.Config || got.ServedAt != other.Listen {
		t.Errorf("OwnTarget beside a hub at the same address = %+v; want no token, and the other registry named", got)
	}
	other.Listen = "127.0.0.1:9999"
	if got := OwnTarget(h, "secret", other); got.Token != "secret" {
		t.Errorf("OwnTarget beside a hub elsewhere = %+v; want the registry's token", got)
	}
}

// TestAnswerError: the hub's JSON error is its reason; a 401 is the token
// sentence; another body shows only a first line of plain text.
func TestAnswerError(t *testing.T) {
	tg := Target{Listen: "127.0.0.1:7733"}
	var he *HubError
	err := tg.AnswerError(http.StatusNotFound, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no server \"x\""}}`))
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || he.Reason != `no server "x"` || err.Error() != `the hub refused: no server "x"` {
		t.Errorf("a JSON refusal: %#v", err)
	}
	if err := tg.AnswerError(http.StatusUnauthorized, nil); !strings.Contains(err.Error(), "the registry gives none") {
		t.Errorf("a 401 without a token: %v", err)
	}
	if err := tg.AnswerError(http.StatusBadGateway, []byte("Bad gateway\n<html>")); err.Error() != "the hub at 127.0.0.1:7733 answered HTTP 502: Bad gateway" {
		t.Errorf("a proxy's page: %v", err)
	}
	if err := tg.AnswerError(http.StatusBadGateway, []byte(`{"x": 1}`)); err.Error() != "the hub at 127.0.0.1:7733 answered HTTP 502" {
		t.Errorf("JSON that is no error: %v", err)
	}
}
