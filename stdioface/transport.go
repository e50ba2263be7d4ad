package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// What one connection to the hub hands the face: the hub's own messages
// (faceHandler), and the HTTP transport that tells the face whether a
// request went out and whether the hub can be reached at all.

// faceHandler receives what the hub sends on its own initiative over
// connection gen.
type faceHandler struct {
	f   *face
	gen int
}

// HandleNotification writes the hub's notification to the client as it
// came. A cancellation names a request of the hub's, which the client knows
// under the face's id: it is translated, or kept for a request that has not
// reached the client yet, which then never does.
func (h faceHandler) HandleNotification(m *jsonrpc.Message, _ json.RawMessage) {
	if m.Method == "notifications/cancelled" {
		if !h.f.hubCancelled(h.gen, m.Params) {
			h.f.log.Debug("kept the hub's cancellation of a request not being forwarded, in case it has yet to come")
		}
		return
	}
	h.f.sendHub(m)
}

// HandleRequest forwards the hub's request to the client.
func (h faceHandler) HandleRequest(ctx context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	return h.f.askClient(ctx, h.gen, m)
}

// hubTransport is the HTTP transport of one connection to the hub. It tells
// the face when the hub cannot be reached (a dial fails), which requests
// went out, and refuses the DELETE of a replaced connection.
type hubTransport struct {
	base        http.RoundTripper
	onDialError func()
	abandoned   atomic.Bool

	mu      sync.Mutex
	watched map[string]bool // request id → whether a POST carrying it was written
}

// RoundTrip implements http.RoundTripper.
func (t *hubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && t.abandoned.Load() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errAbandoned
	}
	if id := t.watchedID(req); id != "" {
		// Written whole, the request may have been acted on; a dial
		// that failed or was cancelled, or a write cut short, means
		// it was not.
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(info httptrace.WroteRequestInfo) {
				if info.Err == nil {
					t.mu.Lock()
					if _, ok := t.watched[id]; ok {
						t.watched[id] = true
					}
					t.mu.Unlock()
				}
			},
		}))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil && isDialError(err) {
		t.onDialError()
	}
	return resp, err
}

// watchedID is the id of the request a POST carries, when it is watched.
func (t *hubTransport) watchedID(req *http.Request) string {
	t.mu.Lock()
	n := len(t.watched)
	t.mu.Unlock()
	if n == 0 || req.Method != http.MethodPost || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, faceMaxLine+1))
	if err != nil {
		return ""
	}
	m, err := jsonrpc.Decode(data)
	if err != nil || !m.IsRequest() {
		return ""
	}
	return string(m.ID)
}

// watch starts noting whether request id goes out.
func (t *hubTransport) watch(id string) {
	t.mu.Lock()
	t.watched[id] = false
	t.mu.Unlock()
}

// unwatch stops watching request id and reports whether it went out.
func (t *hubTransport) unwatch(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	sent := t.watched[id]
	delete(t.watched, id)
	return sent
}

// abandon makes the connection's closing leave its session alive.
func (t *hubTransport) abandon() {
	if t != nil {
		t.abandoned.Store(true)
	}
}

// isDialError reports whether err is a failure to connect at all: the
// request never reached the hub.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
