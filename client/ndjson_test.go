package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Replies with Content-Type application/json that hold several messages,
// newline-delimited: a stateless server may stream a call's notifications
// (and requests of its own) that way before the response.

// ndjsonTool writes one tools/call reply as an application/json body.
type ndjsonTool func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message)

// writeLine writes one message of a newline-delimited body, and flushes it
// so that it leaves before the next one is written.
func writeLine(w http.ResponseWriter, m *jsonrpc.Message) {
	w.Write(append(m.Encode(), '\n'))
	http.NewResponseController(w).Flush()
}

func startNDJSON(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
}

func progressNote(n int) *jsonrpc.Message {
	return jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"tok-1","progress":`+string(jsonrpc.IntID(int64(n)))+`}`))
}

func textResult(m *jsonrpc.Message, text string) *jsonrpc.Message {
	return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":`+string(jsonrpc.Quote(text))+`}]}`))
}

// newStatelessFake is a server of the 2026-07-28 revision only: it
// answers server/discover, holds the listen stream, and answers each
// tools/call with the tool of that name (an empty result for others).
func newStatelessFake(t *testing.T, tools map[string]ndjsonTool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		if r.Method != http.MethodPost || err != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		res := `{"resultType":"complete","content":[]}`
		switch m.Method {
		case "server/discover":
			res = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ndjson","version":"1"}},"ttlMs":0,"cacheScope":"private"}`
		case "subscriptions/listen":
			<-r.Context().Done()
			return
		case "tools/call":
			if tool := tools[toolName(m)]; tool != nil {
				tool(w, r, m)
				return
			}
		}
		writeJSONMsg(w, jsonrpc.NewResponse(m.ID, json.RawMessage(res)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ndjsonTools are the replies the tests below ask both kinds of server
// for. A progress notification goes first, and the result is written only
// once the handler has it: a reply is read message by message, not whole.
func ndjsonTools(rec *recorder) map[string]ndjsonTool {
	return map[string]ndjsonTool{
		"stream": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			startNDJSON(w)
			writeLine(w, progressNote(1))
			select {
			case <-rec.notify:
			case <-r.Context().Done():
				return
			}
			writeLine(w, textResult(m, "done"))
			// After the response: not read.
			writeLine(w, jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"after"}`)))
		},
		"pretty": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			var buf bytes.Buffer
			json.Indent(&buf, textResult(m, "pretty").Encode(), "", "  ")
			startNDJSON(w)
			w.Write(buf.Bytes())
		},
		"many": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			startNDJSON(w)
			for range 10 {
				writeLine(w, jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"`+strings.Repeat("x", 1000)+`"}`)))
			}
			writeLine(w, textResult(m, "many"))
		},
		"big": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			startNDJSON(w)
			writeLine(w, progressNote(1))
			writeLine(w, bigResult(m, 64<<10))
		},
		"garbled": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			startNDJSON(w)
			writeLine(w, progressNote(1))
			io.WriteString(w, "not json\n")
		},
	}
}

// TestJSONReplyNewlineDelimited: in either era, a JSON reply of several
// messages is read one message at a time: the notifications before the
// response reach the handler as they come, related to the call, the
// response answers the call, and what follows it is not read. A
// pretty-printed single message still reads; the size limit bounds each
// message, not the body; bytes that are not JSON fail the call as before.
func TestJSONReplyNewlineDelimited(t *testing.T) {
	for _, era := range []string{"session", "stateless"} {
		t.Run(era, func(t *testing.T) {
			rec := newRecorder()
			tools := ndjsonTools(rec)
			cfg := Config{MaxMessageBytes: 4096}
			if era == "stateless" {
				cfg.URL = newStatelessFake(t, tools)
			} else {
				f := newFakeStreamable(t)
				for name, tool := range tools {
					f.tools[name] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) { tool(w, r, m) }
				}
				cfg.URL, cfg.Transport = f.url, TransportStreamableHTTP
			}
			c, logs := startHTTP(t, cfg, rec)
			if c.Modern() != (era == "stateless") {
				t.Fatalf("modern = %v\nlogs:\n%s", c.Modern(), logs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			res, err := callTool(ctx, c, "stream", `{}`)
			if err != nil || !strings.Contains(string(res), `"done"`) {
				t.Fatalf("stream: %s %v\nlogs:\n%s", res, err, logs)
			}
			if rel := rec.relatedOf("notifications/progress"); len(rel) != 1 || rel[0] == nil {
				t.Errorf("progress notifications related to %q, want one related to the call", rel)
			}
			if res, err := callTool(ctx, c, "pretty", `{}`); err != nil || !strings.Contains(string(res), `"pretty"`) {
				t.Errorf("a pretty-printed reply: %s %v", res, err)
			}
			if res, err := callTool(ctx, c, "many", `{}`); err != nil || !strings.Contains(string(res), `"many"`) {
				t.Errorf("ten messages of 1 kB under a 4 kB limit: %s %v", res, err)
			}
			if n := len(rec.notifications("notifications/message")); n != 10 {
				t.Errorf("%d log messages reached the handler, want the 10 before the responses", n)
			}
			start := time.Now()
			_, err = callTool(ctx, c, "big", `{}`)
			wantTooLarge(t, err, "4096", start, 10*time.Second)
			if n := len(rec.notifications("notifications/progress")); n != 2 {
				t.Errorf("%d progress notifications, want the one before the oversized result too", n)
			}
			if _, err := callTool(ctx, c, "garbled", `{}`); err == nil || !strings.Contains(err.Error(), "upstream sent an invalid message: ") || !errors.Is(err, jsonrpc.ErrParse) {
				t.Errorf("a reply that goes on with bytes that are not JSON: %v", err)
			}
			if res, err := callTool(ctx, c, "echo", `{}`); err != nil {
				t.Errorf("a call after them: %s %v", res, err)
			}
		})
	}
}

// TestJSONReplyServerRequest: a request of the server's in a JSON reply,
// before the response, is answered as one on the call's SSE stream is:
// through the handler, related to the call.
func TestJSONReplyServerRequest(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["ask"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startNDJSON(w)
		writeLine(w, jsonrpc.NewRequest(json.RawMessage(`"srv-1"`), "roots/list", nil))
		select {
		case reply := <-f.replies:
			writeLine(w, textResult(m, "roots "+string(reply.Result)))
		case <-r.Context().Done():
		}
	}
	h := newRelHandler()
	h.answer = func(*jsonrpc.Message) (json.RawMessage, error) { return json.RawMessage(`{"roots":[]}`), nil }
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "ask", `{}`)
	if err != nil || !strings.Contains(string(res), `roots {\"roots\":[]}`) {
		t.Fatalf("ask: %s %v\nlogs:\n%s", res, err, logs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reqRelated) != 1 || h.reqRelated[0] == nil {
		t.Errorf("the server's request related to %q, want the call", h.reqRelated)
	}
}

// TestJSONReplyWithoutResponse: a stateless server's JSON reply that ends
// before the response fails the call at once, as a stream that ends early
// does; nothing else could bring the response.
func TestJSONReplyWithoutResponse(t *testing.T) {
	url := newStatelessFake(t, map[string]ndjsonTool{
		"mute": func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
			startNDJSON(w)
			writeLine(w, progressNote(1))
		},
	})
	c, _ := startHTTP(t, Config{URL: url}, newRecorder())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := callTool(ctx, c, "mute", `{}`); !errors.Is(err, ErrStreamFailed) || ctx.Err() != nil {
		t.Errorf("err = %v, want ErrStreamFailed at once", err)
	}
}
