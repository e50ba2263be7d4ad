package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestHandlerNotifications: progress and log messages on one line each,
// anything else by method and params.
func TestHandlerNotifications(t *testing.T) {
	var b bytes.Buffer
	h := handler{out: &b}
	for _, m := range []struct{ method, params string }{
		{"notifications/progress", `{"progressToken":"probe","progress":1,"total":3,"message":"one"}`},
		{"notifications/progress", `{"progressToken":"probe","progress":0.5}`},
		{"notifications/message", `{"level":"info","logger":"srv","data":{"a":1}}`},
		{"notifications/tools/list_changed", `{}`},
	} {
		h.HandleNotification(&jsonrpc.Message{Method: m.method, Params: json.RawMessage(m.params)}, nil)
	}
	want := "progress 1/3 one\nprogress 0.5\nlog info srv {\"a\":1}\nnotification notifications/tools/list_changed {}\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestHandlerRequests: no roots, a declined elicitation (shown), and
// method not found for anything else (sampling included).
func TestHandlerRequests(t *testing.T) {
	var b bytes.Buffer
	h := handler{out: &b}
	ctx := context.Background()
	if res, err := h.HandleRequest(ctx, &jsonrpc.Message{Method: "roots/list"}, nil); err != nil || string(res) != `{"roots":[]}` {
		t.Errorf("roots/list: %s, %v", res, err)
	}
	res, err := h.HandleRequest(ctx, &jsonrpc.Message{Method: "elicitation/create", Params: json.RawMessage(`{"message":"Your name?"}`)}, nil)
	if err != nil || string(res) != `{"action":"decline"}` {
		t.Errorf("elicitation/create: %s, %v", res, err)
	}
	_, err = h.HandleRequest(ctx, &jsonrpc.Message{Method: "sampling/createMessage"}, nil)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("sampling/createMessage: %v", err)
	}
	want := "the server asked: Your name?; probe declines\nthe server asked for sampling/createMessage; probe cannot answer it\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
