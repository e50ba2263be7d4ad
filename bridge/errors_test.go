package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

func TestCallError(t *testing.T) {
	tooBig := fmt.Errorf("%w: response over 1048576 bytes", client.ErrMessageTooLarge)
	tests := []struct {
		name        string
		err         error
		tooLarge    bool
		unavailable bool
		same        bool // returned as it is
		text        string
	}{
		{name: "response over the client's limit", err: tooBig, tooLarge: true,
			text: "server gh: upstream message too large: response over 1048576 bytes (the limit is [hub] max_response_bytes)"},
		{name: "over the limit, and the stream lost with it", err: fmt.Errorf("%w; it ended the stream (%w)", tooBig, client.ErrStreamFailed), tooLarge: true},
		{name: "stream failed", err: client.ErrStreamFailed, unavailable: true},
		{name: "closed", err: client.ErrClosed, unavailable: true},
		{name: "upstream JSON-RPC error", err: jsonrpc.NewError(-32000, "no"), same: true},
		{name: "deadline", err: context.DeadlineExceeded, same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callError("gh", tt.err)
			var tl interface{ TooLarge() bool }
			var un interface{ Unavailable() bool }
			if (errors.As(got, &tl) && tl.TooLarge()) != tt.tooLarge {
				t.Errorf("callError(%v) = %v; too large: want %v", tt.err, got, tt.tooLarge)
			}
			if (errors.As(got, &un) && un.Unavailable()) != tt.unavailable {
				t.Errorf("callError(%v) = %v; unavailable: want %v", tt.err, got, tt.unavailable)
			}
			if tt.same && got != tt.err {
				t.Errorf("callError(%v) = %v; want it unchanged", tt.err, got)
			}
			if tt.text != "" && got.Error() != tt.text {
				t.Errorf("callError = %q\nwant %q", got, tt.text)
			}
			if tt.tooLarge && !strings.Contains(got.Error(), "max_response_bytes") {
				t.Errorf("callError = %q does not name the setting", got)
			}
		})
	}
}

// TestCallErrorNamesLogin: a call refused for want of a scope says what
// to run, since the hub signs in only through mcphub login; other HTTP
// refusals stay as they are.
func TestCallErrorNamesLogin(t *testing.T) {
	scoped := &client.HTTPError{Method: "POST", URL: "https://x/mcp", Status: 403, Scope: "mcp:write"}
	if got := callError("tracker", scoped).Error(); !strings.Contains(got, "(mcp:write)") || !strings.HasSuffix(got, "; run mcphub login tracker") {
		t.Errorf("callError = %q", got)
	}
	plain := &client.HTTPError{Method: "POST", URL: "https://x/mcp", Status: 403}
	if got := callError("tracker", plain); got != error(plain) {
		t.Errorf("a plain 403 became %q", got)
	}
}
