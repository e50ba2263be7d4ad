package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcphub/mcphub/internal/termtext"
)

// TestSignInCallbackTakesOnlyItsState: the loopback listener answers the
// authorization it waits for, by its state, once; a request without that
// state (another program, a web page, a reload) is refused and leaves the
// sign-in waiting, and a stale answer never reaches the next authorization.
func TestSignInCallbackTakesOnlyItsState(t *testing.T) {
	si, err := startSignIn("tracker", io.Discard, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	get := func(query string) int {
		t.Helper()
		resp, err := http.Get(si.RedirectURL() + "?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Setenv("BROWSER", "true") // a browser that opens nothing
	fetch := func(state string) <-chan *auth.AuthorizationResult {
		out := make(chan *auth.AuthorizationResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := si.Fetch(ctx, &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=" + state})
			if err != nil {
				t.Errorf("Fetch(%s): %v", state, err)
			}
			out <- res
		}()
		return out
	}
	waitFor := func(state string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			si.mu.Lock()
			w := si.want
			si.mu.Unlock()
			if w == state {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sign-in never waited for state %s", state)
			}
			time.Sleep(time.Millisecond)
		}
	}
	first := fetch("A")
	waitFor("A")
	if code := get("error=access_denied&error_description=%1b%5d0%3bpwned%07"); code != http.StatusBadRequest {
		t.Errorf("a forged error without the state: HTTP %d, want 400", code)
	}
	if code := get("code=evil&state=B"); code != http.StatusBadRequest {
		t.Errorf("an answer with another state: HTTP %d, want 400", code)
	}
	if code := get("code=good&state=A&iss=https%3A%2F%2Fas.example"); code != http.StatusOK {
		t.Errorf("the awaited answer: HTTP %d, want 200", code)
	}
	if res := <-first; res == nil || res.Code != "good" || res.State != "A" || res.Iss != "https://as.example" {
		t.Fatalf("the first authorization got %+v", res)
	}
	if code := get("code=good&state=A"); code != http.StatusBadRequest {
		t.Errorf("a reload of the answered redirect: HTTP %d, want 400", code)
	}
	second := fetch("C")
	waitFor("C")
	if code := get("code=good&state=A"); code != http.StatusBadRequest {
		t.Errorf("the first answer again, during the second authorization: HTTP %d, want 400", code)
	}
	get("code=second&state=C")
	if res := <-second; res == nil || res.Code != "second" {
		t.Fatalf("the second authorization got %+v", res)
	}
	if si.Fetched() != 2 {
		t.Errorf("Fetched = %d, want 2", si.Fetched())
	}
}

func TestStripControlsOfAnAnswer(t *testing.T) {
	if got := termtext.StripControls("a\x1b]0;pwned\ab\u00e9"); strings.ContainsAny(got, "\x1b\a") || got != "a]0;pwnedb\u00e9" {
		t.Errorf("stripControls = %q", got)
	}
}
