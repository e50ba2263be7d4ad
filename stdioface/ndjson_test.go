package stdioface

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// A hub's answer with Content-Type application/json may hold several
// messages, newline-delimited: the notifications of a call, then its
// response. The face reads them one at a time in either era: the session
// face through its client.Conn, the stateless face with the same reader.

// ndjsonHub is a hub stand-in that answers in either era. Its tools/call
// answers are scripted by tool name; seen tells the tool "stream" what the
// face's client has received so far.
type ndjsonHub struct {
	url  string
	face atomic.Pointer[runningFace]
}

func startNDJSONHub(t *testing.T) *ndjsonHub {
	h := &ndjsonHub{}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/mcp", h.serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *ndjsonHub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Decode(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !m.IsRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.NewResponse(m.ID, json.RawMessage(result)).Encode())
	}
	switch m.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		answer(`{"protocolVersion":"` + sessionVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"ndjson-hub","version":"1"}}`)
	case "tools/list":
		answer(`{"tools":[]}`)
	case "tools/call":
		name, _ := jsonrpc.StringMember(m.Params, "name")
		h.call(w, r, m, name)
	default:
		answer(`{}`)
	}
}

// call answers tools/call of tool name with a newline-delimited body.
func (h *ndjsonHub) call(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, name string) {
	line := func(msg *jsonrpc.Message) {
		w.Write(append(msg.Encode(), '\n'))
		http.NewResponseController(w).Flush()
	}
	result := func(text string) *jsonrpc.Message {
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"`+text+`"}]}`))
	}
	log := func(data string) *jsonrpc.Message {
		return jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"`+data+`"}`))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	switch name {
	case "stream":
		line(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"p1","progress":1}`)))
		// The result goes only once the client has the progress: the
		// face relays each message as it comes.
		if !poll(20*time.Second, func() bool { return len(h.face.Load().messages(isProgress)) > 0 }) {
			return
		}
		line(result("done"))
		line(log("after the response"))
	case "pretty":
		var buf bytes.Buffer
		json.Indent(&buf, result("pretty").Encode(), "", "  ")
		w.Write(buf.Bytes())
	case "garbled":
		line(log("before"))
		io.WriteString(w, "not json\n")
	case "many":
		// Messages whose sum is over the face's limit, each well under it.
		data := strings.Repeat("x", faceMaxMessage/3)
		for range 4 {
			line(log(data))
		}
		line(result("many"))
	case "huge":
		line(result(strings.Repeat("x", faceMaxMessage)))
	}
}

func isProgress(m *jsonrpc.Message) bool { return m.Method == "notifications/progress" }

// statelessParams is params with the _meta a 2026-07-28 request carries.
func statelessParams(name string) map[string]any {
	return map[string]any{"name": name, "arguments": map[string]any{}, "_meta": map[string]any{
		"progressToken":                "p1",
		jsonrpc.MetaProtocolVersion:    jsonrpc.Version20260728,
		jsonrpc.MetaClientCapabilities: map[string]any{},
		jsonrpc.MetaClientInfo:         map[string]any{"name": "lines", "version": "0"},
	}}
}

// TestFaceNewlineDelimitedAnswer: in either era, a call answered with a
// newline-delimited JSON body gets its progress as it comes, then its
// result; what follows the response is not relayed; a pretty-printed body
// still reads; bytes that are not JSON after a message fail the call.
func TestFaceNewlineDelimitedAnswer(t *testing.T) {
	for _, era := range []string{"session", "stateless"} {
		t.Run(era, func(t *testing.T) {
			h := startNDJSONHub(t)
			face := startFace(t, h.url, "/mcp", nil)
			h.face.Store(face)
			params := func(name string) map[string]any {
				if era == "stateless" {
					return statelessParams(name)
				}
				return map[string]any{"name": name, "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p1"}}
			}
			if era == "session" {
				face.initialize()
			}
			if m := face.request("tools/call", params("stream")); m.Error != nil || !strings.Contains(string(m.Result), `"done"`) {
				t.Fatalf("stream: %s", m.Encode())
			}
			if n := len(face.messages(isProgress)); n != 1 {
				t.Errorf("%d progress notifications reached the client, want 1", n)
			}
			if m := face.request("tools/call", params("pretty")); m.Error != nil || !strings.Contains(string(m.Result), `"pretty"`) {
				t.Errorf("a pretty-printed answer: %s", m.Encode())
			}
			m := face.request("tools/call", params("garbled"))
			if m.Error == nil || !strings.Contains(m.Error.Message, "not valid JSON") {
				t.Errorf("an answer that goes on with bytes that are not JSON: %s", m.Encode())
			}
			logs := face.messages(func(m *jsonrpc.Message) bool { return m.Method == "notifications/message" })
			if len(logs) != 1 || !strings.Contains(string(logs[0].Params), `"before"`) {
				t.Errorf("log messages relayed: %d, want only the one before the garbled bytes", len(logs))
			}
			if bad := face.badLines(); len(bad) > 0 {
				t.Errorf("stdout lines that are not one JSON-RPC message: %.200q", bad)
			}
		})
	}
}

// TestFaceNewlineDelimitedLimit: the stateless face bounds each message of
// a JSON answer, not the answer: messages whose sum is over the limit pass,
// one over it fails its call.
func TestFaceNewlineDelimitedLimit(t *testing.T) {
	max := faceMaxMessage
	faceMaxMessage = 4096
	t.Cleanup(func() { faceMaxMessage = max })
	h := startNDJSONHub(t)
	face := startFace(t, h.url, "/mcp", nil)
	h.face.Store(face)
	if m := face.request("tools/call", statelessParams("many")); m.Error != nil || !strings.Contains(string(m.Result), `"many"`) {
		t.Errorf("four messages of a third of the limit each: %.200s", m.Encode())
	}
	if n := len(face.messages(func(m *jsonrpc.Message) bool { return m.Method == "notifications/message" })); n != 4 {
		t.Errorf("%d log messages reached the client, want 4", n)
	}
	m := face.request("tools/call", statelessParams("huge"))
	if m.Error == nil || !strings.Contains(m.Error.Message, "over 4096 bytes") {
		t.Errorf("a result over the limit: %.200s", m.Encode())
	}
}
