package stdioface

import (
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestFaceRelay: through the face, the hub's initialize result, its tools
// and a call's result reach the client; a list change the hub announces
// passes through; every line on stdout is one JSON-RPC message; and stdin's
// end closes the face (nil) and the hub session.
func TestFaceRelay(t *testing.T) {
	h := startSDKHub(t)
	face := startFace(t, h.url, "/mcp", nil)
	if init := face.initialize(); !strings.Contains(string(init.Result), `"sdk-hub"`) {
		t.Fatalf("initialize result %s, want the hub's", init.Result)
	}
	if m := face.request("tools/list", map[string]any{}); m.Error != nil || !strings.Contains(string(m.Result), `"mutate"`) {
		t.Fatalf("tools/list: %s", m.Encode())
	}
	if m := face.request("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"add": "hi"}}); m.Error != nil || !strings.Contains(string(m.Result), "echo:hi") {
		t.Fatalf("tools/call echo: %s", m.Encode())
	}
	face.request("tools/call", map[string]any{"name": "mutate", "arguments": map[string]any{"add": "x1"}})
	if !poll(10*time.Second, func() bool {
		return len(face.messages(func(m *jsonrpc.Message) bool { return m.Method == "notifications/tools/list_changed" })) > 0
	}) {
		t.Fatal("notifications/tools/list_changed did not reach the client")
	}
	if n := h.sessions(); n != 1 {
		t.Fatalf("the hub has %d sessions, want the face's one", n)
	}
	if err := face.closeStdin(t); err != nil {
		t.Fatalf("the face ended with %v, want nil at stdin's end", err)
	}
	if !poll(5*time.Second, func() bool { return h.sessions() == 0 }) {
		t.Errorf("the hub session outlived the face")
	}
	if bad := face.badLines(); len(bad) > 0 {
		t.Errorf("stdout lines that are not one JSON-RPC message: %q", bad)
	}
}

// TestFaceBeforeInitialize: before initialize, ping is answered and any
// other request refused; a line that is not JSON gets a parse error; a
// second initialize is refused.
func TestFaceBeforeInitialize(t *testing.T) {
	h := startSDKHub(t)
	face := startFace(t, h.url, "/mcp", nil)
	if m := face.request("ping", nil); m.Error != nil {
		t.Errorf("ping before initialize: %s", m.Encode())
	}
	if m := face.request("tools/list", map[string]any{}); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("tools/list before initialize: %s, want Invalid Request", m.Encode())
	}
	face.in.Write([]byte("this is not json\n"))
	if !poll(5*time.Second, func() bool {
		return len(face.messages(func(m *jsonrpc.Message) bool {
			return m.Error != nil && m.Error.Code == jsonrpc.CodeParseError && string(m.ID) == "null"
		})) == 1
	}) {
		t.Errorf("a line that is not JSON got no parse error")
	}
	face.initialize()
	if m := face.request("initialize", map[string]any{}); m.Error == nil || !strings.Contains(m.Error.Message, "already initialized") {
		t.Errorf("a second initialize: %s", m.Encode())
	}
}

// TestFaceGivesUp: a hub that does not come back within GiveUp ends the
// face with an error saying so.
func TestFaceGivesUp(t *testing.T) {
	h := startSDKHub(t)
	face := startFace(t, h.url, "/mcp", nil, func(o *Options) { o.GiveUp = time.Second })
	face.initialize()
	h.close()
	select {
	case err := <-face.done:
		face.done <- err // for cleanup
		if err == nil || !strings.Contains(err.Error(), "no hub has answered") {
			t.Errorf("the face ended with %v, want that no hub answered", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the face did not give up within 20 s")
	}
}
