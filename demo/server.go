package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// tools are the demo server's tools/list entries.
const tools = `[
{"name":"echo","description":"Returns the text it is given.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},
{"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},
{"name":"countdown","description":"Counts down from n (at most 100), one step every 100 ms, reporting progress.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100}},"required":["n"]}}
]`

// readme is the text of the resource demo://readme.
const readme = "This resource comes from mcphub's built-in demo server. Replace the demo with your own servers: mcphub add NAME -- COMMAND, then mcphub remove demo."

// Serve runs the demo server over newline-delimited JSON-RPC (MCP's stdio
// transport), reading requests from in and writing what it sends to out,
// until in ends; the server names itself version in its answer to
// initialize. Requests are handled concurrently, so that a countdown can
// be cancelled while it runs; writes are serialised. Serve returns once
// every request it read is answered or cancelled.
func Serve(in io.Reader, out io.Writer, version string) {
	var mu sync.Mutex
	send := func(m *jsonrpc.Message) {
		b := append(m.Encode(), '\n')
		mu.Lock()
		out.Write(b)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	calls := map[string]context.CancelFunc{}
	var callsMu sync.Mutex

	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			m, derr := jsonrpc.Decode(line)
			switch {
			case derr != nil:
				var e *jsonrpc.Error
				if errors.As(derr, &e) {
					send(jsonrpc.NewErrorResponse(nil, e))
				}
			case m.Method == "notifications/cancelled":
				id, _ := jsonrpc.Member(m.Params, "requestId")
				callsMu.Lock()
				if c := calls[string(id)]; c != nil {
					c()
				}
				callsMu.Unlock()
			case m.IsRequest():
				cctx, ccancel := context.WithCancel(ctx)
				callsMu.Lock()
				calls[string(m.ID)] = ccancel
				callsMu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer ccancel()
					res, rerr := handle(cctx, m, send, version)
					callsMu.Lock()
					delete(calls, string(m.ID))
					callsMu.Unlock()
					if cctx.Err() != nil && ctx.Err() == nil {
						return // cancelled: no response, as the spec asks
					}
					if rerr != nil {
						send(jsonrpc.NewErrorResponse(m.ID, rerr))
						return
					}
					send(jsonrpc.NewResponse(m.ID, res))
				}()
			}
		}
		if err != nil {
			return
		}
	}
}

// handle answers one request m; send sends what it reports meanwhile
// (progress).
func handle(ctx context.Context, m *jsonrpc.Message, send func(*jsonrpc.Message), version string) (json.RawMessage, *jsonrpc.Error) {
	switch m.Method {
	case "initialize":
		v, _ := jsonrpc.StringMember(m.Params, "protocolVersion")
		return fmt.Appendf(nil, `{"protocolVersion":%s,"capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"mcphub-demo","version":%s},"instructions":"A demo server built into mcphub: try the countdown tool to see progress."}`,
			jsonrpc.Quote(jsonrpc.NegotiateVersion(v)), jsonrpc.Quote(version)), nil
	case "ping":
		return json.RawMessage(`{}`), nil
	case "tools/list":
		var list bytes.Buffer
		json.Compact(&list, []byte(tools)) // one line: stdio frames by newline
		return json.RawMessage(`{"tools":` + list.String() + `}`), nil
	case "prompts/list":
		return json.RawMessage(`{"prompts":[{"name":"greet","description":"Greets someone.","arguments":[{"name":"name","required":true}]}]}`), nil
	case "prompts/get":
		args, _ := jsonrpc.Member(m.Params, "arguments")
		name, _ := jsonrpc.StringMember(args, "name")
		return fmt.Appendf(nil, `{"messages":[{"role":"user","content":{"type":"text","text":%s}}]}`, jsonrpc.Quote("Say hello to "+name+".")), nil
	case "resources/list":
		return json.RawMessage(`{"resources":[{"uri":"demo://readme","name":"readme","mimeType":"text/plain"}]}`), nil
	case "resources/templates/list":
		return json.RawMessage(`{"resourceTemplates":[]}`), nil
	case "resources/read":
		uri, _ := jsonrpc.StringMember(m.Params, "uri")
		if uri != "demo://readme" {
			return nil, jsonrpc.NewError(-32002, "Resource not found: "+uri)
		}
		return fmt.Appendf(nil, `{"contents":[{"uri":"demo://readme","mimeType":"text/plain","text":%s}]}`, jsonrpc.Quote(readme)), nil
	case "tools/call":
		return call(ctx, m, send)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %s", m.Method)
}

// call runs the tool a tools/call request m names: countdown reports its
// progress with send when the request asks for it.
func call(ctx context.Context, m *jsonrpc.Message, send func(*jsonrpc.Message)) (json.RawMessage, *jsonrpc.Error) {
	name, _ := jsonrpc.StringMember(m.Params, "name")
	args, _ := jsonrpc.Member(m.Params, "arguments")
	text := func(s string) json.RawMessage {
		return fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(s))
	}
	switch name {
	case "echo":
		s, _ := jsonrpc.StringMember(args, "text")
		return text(s), nil
	case "add":
		var p struct{ A, B float64 }
		if err := json.Unmarshal(args, &p); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "a and b must be numbers")
		}
		return text(fmt.Sprint(p.A + p.B)), nil
	case "countdown":
		var p struct{ N int }
		json.Unmarshal(args, &p)
		if p.N < 1 || p.N > 100 {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "n must be between 1 and 100")
		}
		var token json.RawMessage
		if meta, ok := jsonrpc.Member(m.Params, "_meta"); ok {
			token, _ = jsonrpc.Member(meta, "progressToken")
		}
		for i := 1; i <= p.N; i++ {
			select {
			case <-ctx.Done():
				return nil, jsonrpc.NewError(-32800, "cancelled")
			case <-time.After(100 * time.Millisecond):
			}
			if token != nil {
				send(jsonrpc.NewNotification("notifications/progress",
					fmt.Appendf(nil, `{"progressToken":%s,"progress":%d,"total":%d,"message":%s}`, token, i, p.N, jsonrpc.Quote(fmt.Sprint(p.N-i)))))
			}
		}
		return text("liftoff"), nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %q", name)
}
