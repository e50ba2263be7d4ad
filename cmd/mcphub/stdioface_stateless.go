package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// The stdio face for a client of the 2026-07-28 revision. Such a client
// opens no session: its first request is not initialize but one carrying
// the revision's _meta (server/discover, usually). From then on each of its
// requests goes to the hub's endpoint as one stateless POST with the
// headers the revision asks for, and what the hub answers (a JSON body, or
// an SSE stream of notifications ending with the response) is written back
// line by line. The hub makes every check and every translation between
// the eras; the face carries messages. A request that never reached the
// hub (nothing accepted the connection: the hub is restarting, perhaps on
// another port) waits for a hub to answer, as the session face does, and
// is sent there; a stream the hub dropped is answered with an error, since
// a stateless request is not resumed.

// statelessRequest reports whether m, a client's message before any
// initialize, opens the face in the 2026-07-28 revision: a request whose
// _meta names a protocol version, as every request of that revision does.
// (A bare server/discover is a session-era client's probe: it is refused,
// and the client initializes.)
func statelessRequest(m *jsonrpc.Message) bool {
	if !m.IsRequest() || m.Method == "initialize" {
		return false
	}
	_, ok := jsonrpc.MetaMember(m.Params, jsonrpc.MetaProtocolVersion)
	return ok
}

// statelessFace relays a 2026-07-28 client's requests.
type statelessFace struct {
	f *face

	mu     sync.Mutex
	target hubTarget                        // where the hub answered last
	params map[string][]jsonrpc.ParamHeader // tool → its Mcp-Param headers, from the lists relayed
	listed bool                             // a tools/list has been relayed or fetched
	reach  sync.Mutex                       // one wait for the hub at a time
}

// runStateless relays, starting with first, the client's first request,
// until stdin ends or ctx ends (a signal), when it shuts the face down and
// returns nil, or until the client sends initialize (a dual-era client
// falling back to the session era), which it returns unanswered for the
// face to open a session with; requests in flight go on meanwhile.
func (f *face) runStateless(ctx context.Context, msgs <-chan *jsonrpc.Message, first *jsonrpc.Message) *jsonrpc.Message {
	sf := &statelessFace{f: f, target: f.cfg.hub, params: map[string][]jsonrpc.ParamHeader{}}
	f.log.Info("relaying a 2026-07-28 client to the hub statelessly", "url", sf.target.url(f.cfg.path))
	sf.dispatch(first)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				f.shutdown(ctx, true)
				return nil
			}
			if m.IsRequest() && m.Method == "initialize" {
				f.log.Info("the client turned to the session era")
				return m
			}
			sf.dispatch(m)
		case <-ctx.Done():
			f.shutdown(ctx, false)
			return nil
		}
	}
}

// dispatch routes one message of the client's.
func (sf *statelessFace) dispatch(m *jsonrpc.Message) {
	f := sf.f
	switch m.Kind() {
	case jsonrpc.KindRequest:
		sf.startCall(m)
	case jsonrpc.KindNotification:
		if m.Method == "notifications/cancelled" {
			// A stateless request is cancelled by closing its stream,
			// which ending its POST does.
			f.cancelCall(m.Params)
			return
		}
		f.log.Debug("a notification of the client's has no request to go with", "method", m.Method)
	default:
		f.log.Debug("the client answered a request the hub never sends in 2026-07-28", "rpc_id", string(m.ID))
	}
}

// startCall relays a request on its own goroutine, tracked like the
// session face's calls so that stdin's end waits for it and a
// cancellation stops it.
func (sf *statelessFace) startCall(m *jsonrpc.Message) {
	f := sf.f
	ctx, cancel := context.WithCancel(f.ctx)
	key := string(m.ID)
	f.callsMu.Lock()
	if _, dup := f.calls[key]; dup {
		f.callsMu.Unlock()
		cancel()
		f.send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "a request with this id is already in flight")))
		return
	}
	f.calls[key] = cancel
	f.callsMu.Unlock()
	f.callsWG.Add(1)
	go func() {
		defer f.callsWG.Done()
		defer func() {
			f.callsMu.Lock()
			delete(f.calls, key)
			f.callsMu.Unlock()
			cancel()
		}()
		if err := sf.relay(ctx, m); err != nil && ctx.Err() == nil {
			f.send(jsonrpc.NewErrorResponse(m.ID, asRPCError(err)))
		}
	}()
}

// relay sends one request to the hub and writes back what the hub answers
// for it, the response last. It returns an error only when no response was
// written.
func (sf *statelessFace) relay(ctx context.Context, m *jsonrpc.Message) error {
	if m.Method == "tools/call" {
		sf.learnTools(ctx, m)
	}
	resp, err := sf.post(ctx, m)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		r := sse.NewReader(resp.Body, faceMaxLine)
		defer r.Release()
		for {
			ev, err := r.Next()
			if err != nil {
				return fmt.Errorf("the hub's stream for %s ended before its response (%w); a stateless request is not resumed: send it again", m.Method, err)
			}
			if ev.Data == "" {
				continue
			}
			if msg, ok := sf.write(m, []byte(ev.Data)); ok && msg.IsResponse() {
				return nil
			}
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, faceMaxLine+1))
	if err != nil {
		return fmt.Errorf("reading the hub's answer to %s: %w", m.Method, err)
	}
	if len(body) > faceMaxLine {
		return fmt.Errorf("the hub's answer to %s is over %d MiB", m.Method, faceMaxLine>>20)
	}
	if msg, ok := sf.write(m, body); ok && msg.IsResponse() {
		return nil
	}
	return hubAnswerError(sf.current(), resp.StatusCode, body)
}

// write passes one message of the hub's to the client, as one line, and
// learns the Mcp-Param headers of the tools a tools/list result lists. It
// returns the message, false when data is not one.
func (sf *statelessFace) write(req *jsonrpc.Message, data []byte) (*jsonrpc.Message, bool) {
	msg, err := jsonrpc.Decode(data)
	if err != nil {
		sf.f.log.Debug("the hub sent something that is not a JSON-RPC message", "err", err)
		return nil, false
	}
	if msg.IsResponse() && req.Method == "tools/list" && msg.Result != nil {
		sf.note(msg.Result)
	}
	if msg.IsResponse() && !bytes.Equal(msg.ID, req.ID) {
		// A refusal the hub could not tie to the request (id null): the
		// client is told under the id it waits on.
		rpcErr := msg.Error
		if rpcErr == nil {
			rpcErr = jsonrpc.Errorf(jsonrpc.CodeInternalError, "the hub answered id %s to request %s", msg.ID, req.ID)
		}
		msg = jsonrpc.NewErrorResponse(req.ID, rpcErr)
		data = msg.Encode()
	}
	line := data
	if bytes.ContainsAny(line, "\r\n") {
		var buf bytes.Buffer
		if json.Compact(&buf, line) == nil {
			line = buf.Bytes()
		}
	}
	sf.f.queue(append(line[:len(line):len(line)], '\n'))
	return msg, true
}

// note records the Mcp-Param headers of the tools of a tools/list result
// (a tool whose annotations cannot be honoured has none: the client leaves
// it out).
func (sf *statelessFace) note(result json.RawMessage) {
	var tools []json.RawMessage
	if raw, ok := jsonrpc.Member(result, "tools"); !ok || json.Unmarshal(raw, &tools) != nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.listed = true
	for _, t := range tools {
		name, _ := jsonrpc.StringMember(t, "name")
		if hs, err := jsonrpc.ParamHeaders(t); err == nil && hs != nil {
			sf.params[name] = hs
		} else {
			delete(sf.params, name)
		}
	}
}

// learnTools lists the tools once, under the call's own _meta, when the
// client calls one before any tools/list went through the face: the hub
// refuses a call without the Mcp-Param headers its tool asks for.
func (sf *statelessFace) learnTools(ctx context.Context, call *jsonrpc.Message) {
	sf.mu.Lock()
	listed := sf.listed
	sf.mu.Unlock()
	if listed {
		return
	}
	params := json.RawMessage(`{}`)
	if meta, ok := jsonrpc.Member(call.Params, "_meta"); ok {
		params, _ = jsonrpc.SetMember(params, "_meta", meta)
	}
	cursor := ""
	for page := 0; page < 100; page++ {
		p := params
		if cursor != "" {
			p, _ = jsonrpc.SetMember(p, "cursor", jsonrpc.Quote(cursor))
		}
		res, err := sf.call(ctx, jsonrpc.NewRequest(jsonrpc.IntID(-1), "tools/list", p))
		if err != nil {
			sf.f.log.Debug("could not list the tools for their Mcp-Param headers", "err", err)
			return
		}
		sf.note(res)
		if cursor, _ = jsonrpc.StringMember(res, "nextCursor"); cursor == "" {
			return
		}
	}
}

// call is a request of the face's own (its answer is not the client's): the
// result, or why there is none.
func (sf *statelessFace) call(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
	resp, err := sf.post(ctx, m)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r := sse.NewReader(resp.Body, faceMaxLine)
		defer r.Release()
		for {
			ev, err := r.Next()
			if err != nil {
				return nil, err
			}
			if msg, err := jsonrpc.Decode([]byte(ev.Data)); err == nil && msg.IsResponse() {
				data = []byte(ev.Data)
				break
			}
		}
	} else if data, err = io.ReadAll(io.LimitReader(resp.Body, faceMaxLine)); err != nil {
		return nil, err
	}
	msg, err := jsonrpc.Decode(data)
	switch {
	case err != nil:
		return nil, err
	case msg.Error != nil:
		return nil, msg.Error
	}
	return msg.Result, nil
}

// post sends m to the hub. A POST that never reached it waits for a hub to
// answer (see reachHub) and goes there.
func (sf *statelessFace) post(ctx context.Context, m *jsonrpc.Message) (*http.Response, error) {
	body := m.Encode()
	for {
		t := sf.current()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url(sf.f.cfg.path), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		jsonrpc.SetModernHeaders(req.Header, m)
		if m.Method == "tools/call" {
			name, _ := jsonrpc.StringMember(m.Params, "name")
			sf.mu.Lock()
			hs := sf.params[name]
			sf.mu.Unlock()
			args, _ := jsonrpc.Member(m.Params, "arguments")
			jsonrpc.SetParamHeaders(req.Header, hs, args)
		}
		resp, err := t.do(req)
		if err == nil || !errors.Is(err, errNoHub) || ctx.Err() != nil {
			return resp, err
		}
		if err := sf.waitHub(ctx, t); err != nil {
			return nil, err
		}
	}
}

// current is where the hub answered last.
func (sf *statelessFace) current() hubTarget {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.target
}

// waitHub waits for a hub to answer after one at failed did not, unless
// another request found it meanwhile, and makes it the target.
func (sf *statelessFace) waitHub(ctx context.Context, failed hubTarget) error {
	sf.reach.Lock()
	defer sf.reach.Unlock()
	if t := sf.current(); t != failed {
		return nil // found by a request that waited first
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t, err := sf.f.hub.reachHub(time.Now().Add(sf.f.cfg.giveUp))
	if err != nil {
		return err
	}
	sf.mu.Lock()
	sf.target = t
	sf.mu.Unlock()
	sf.f.log.Info("the hub answers again", "url", t.url(sf.f.cfg.path))
	return nil
}
