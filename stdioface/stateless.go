package stdioface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// The stdio face for a client of the 2026-07-28 revision. Such a client
// opens no session: every request it sends carries the revision's _meta.
// From its first one on, each request goes to the hub's endpoint as one
// stateless POST with the headers the revision asks for, and what the hub
// answers (a JSON body, or an SSE stream of notifications ending with the
// response) is written back line by line. The hub makes every check and
// every translation between the eras; the face carries messages.
// Cancelling a request closes its POST, which is how the revision cancels
// over HTTP. A request that never reached the hub (nothing accepted the
// connection: the hub is restarting, perhaps on another port) waits for a
// hub to answer, as the session face does, and is sent there; one whose
// answer the hub was still streaming when it went away fails, since a
// stateless request is not resumed. A client that falls back to the
// session era with initialize gets a session.

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

	mu      sync.Mutex
	target  hubclient.Target                 // where the hub answered last
	params  map[string][]jsonrpc.ParamHeader // tool → its Mcp-Param headers, from the lists relayed
	listed  bool                             // the hub has listed the tools, to the client or the face
	listing chan struct{}                    // closed when the face's own listing under way ends; nil when none
	wait    *hubWait                         // the wait for the hub under way, nil when none
	failed  chan struct{}                    // closed when the hub stayed away past giveUp
	err     error                            // why, once failed is closed
}

// hubWait is one wait for the hub to answer again, shared by every request
// that found it gone.
type hubWait struct {
	done chan struct{}
	err  error
}

// runStateless relays, starting with first, the client's first request,
// until stdin ends or ctx ends (a signal), when it shuts the face down
// and returns nil, nil; until the hub stays away past giveUp, when it
// returns why; or until the client sends initialize (a dual-era client
// falling back to the session era), which it returns unanswered for the
// face to open a session with, along with where the hub answers now.
// Requests in flight go on meanwhile.
func (f *face) runStateless(ctx context.Context, msgs <-chan *jsonrpc.Message, first *jsonrpc.Message) (*jsonrpc.Message, error) {
	sf := &statelessFace{f: f, target: f.cfg.Hub, params: map[string][]jsonrpc.ParamHeader{}, failed: make(chan struct{})}
	f.log.Info("relaying a 2026-07-28 client to the hub statelessly", "url", sf.target.URL(f.cfg.Path))
	sf.dispatch(first)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				f.shutdown(ctx, true)
				return nil, nil
			}
			if m.IsRequest() && m.Method == "initialize" {
				f.log.Info("the client turned to the session era")
				sf.mu.Lock()
				w := sf.wait
				sf.mu.Unlock()
				if w != nil {
					// The session opens where the hub answers again.
					select {
					case <-w.done:
					case <-ctx.Done():
					}
				}
				f.hub.mu.Lock()
				f.hub.target = sf.current()
				f.hub.mu.Unlock()
				return m, nil
			}
			sf.dispatch(m)
		case <-sf.failed:
			// The calls waiting for the hub fail now; they get to say so.
			f.shutdown(ctx, true)
			return nil, sf.err
		case <-f.writerDone:
			// The client no longer reads its stdout: it is gone.
			f.shutdown(ctx, false)
			return nil, nil
		case <-ctx.Done():
			f.shutdown(ctx, false)
			return nil, nil
		}
	}
}

// dispatch routes one message of the client's.
func (sf *statelessFace) dispatch(m *jsonrpc.Message) {
	f := sf.f
	switch m.Kind() {
	case jsonrpc.KindRequest:
		f.track(m, func(ctx context.Context) error { return sf.relay(ctx, m) })
	case jsonrpc.KindNotification:
		if m.Method == "notifications/cancelled" {
			// Ending the request's POST is its cancellation.
			f.cancelCall(m.Params)
			return
		}
		f.log.Debug("a notification of the client's has no request to go with", "method", m.Method)
	default:
		f.log.Debug("the client answered a request the hub never sends in 2026-07-28", "rpc_id", string(m.ID))
	}
}

// relay sends one request to the hub and writes back what the hub answers
// for it, the response last. It returns an error only when it wrote no
// response.
func (sf *statelessFace) relay(ctx context.Context, m *jsonrpc.Message) error {
	if m.Method == "tools/call" {
		sf.learnTools(ctx, m)
	}
	var answered bool
	status, body, err := sf.exchange(ctx, m, func(msg *jsonrpc.Message, data []byte) bool {
		if msg.IsResponse() {
			if m.Method == "tools/list" && msg.Result != nil {
				sf.note(msg.Result)
			}
			if !bytes.Equal(msg.ID, m.ID) {
				// A refusal the hub could not tie to the request (id
				// null): the client is told under the id it waits on.
				rpcErr := msg.Error
				if rpcErr == nil {
					rpcErr = jsonrpc.Errorf(jsonrpc.CodeInternalError, "the hub answered id %s to request %s", msg.ID, m.ID)
				}
				data = jsonrpc.NewErrorResponse(m.ID, rpcErr).Encode()
			}
			answered = true
		}
		sf.f.queue(frameData(data))
		return answered
	})
	switch {
	case answered:
		return nil
	case err != nil:
		return err
	}
	return sf.current().AnswerError(status, body)
}

// exchange POSTs m and hands each JSON-RPC message of the answer (each of
// the JSON body, or of the SSE stream's message events) to each, which
// returns true once it has the response. It returns the status, and the
// start of the body when it held no JSON-RPC message; an error when the
// answer ended early or the POST failed.
func (sf *statelessFace) exchange(ctx context.Context, m *jsonrpc.Message, each func(msg *jsonrpc.Message, data []byte) bool) (int, []byte, error) {
	resp, err := sf.post(ctx, m)
	if err != nil {
		return 0, nil, err
	}
	ended := false
	defer func() {
		if ended {
			// Read to the end (a little), so the connection goes back
			// to the pool instead of being closed.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		}
		resp.Body.Close()
	}()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		r := sse.NewReader(resp.Body, faceMaxMessage)
		defer r.Release()
		for {
			ev, err := r.Next()
			if err != nil {
				return resp.StatusCode, nil, fmt.Errorf("the hub's stream for %s ended before its response (%w); a stateless request is not resumed: send it again", m.Method, err)
			}
			if ev.Data == "" || (ev.Type != "" && ev.Type != "message") {
				continue
			}
			data := []byte(ev.Data)
			if msg, err := jsonrpc.Decode(data); err == nil && each(msg, data) {
				ended = true
				return resp.StatusCode, nil, nil
			}
		}
	}
	// A JSON body: one message, or several, newline-delimited (the
	// notifications before the response), read as they come. Its start is
	// kept for a body that holds no JSON-RPC message: a refusal, in text
	// or JSON, for AnswerError.
	head := &headBuffer{max: faceMaxHead}
	r := jsonrpc.NewReader(io.TeeReader(resp.Body, head), faceMaxMessage)
	got := false // a JSON-RPC message came
	for {
		msg, data, err := r.Next()
		var rpcErr *jsonrpc.Error
		switch {
		case err == nil:
			got = true
			if each(msg, data) {
				ended = true
				return resp.StatusCode, nil, nil
			}
		case errors.Is(err, jsonrpc.ErrTooLarge):
			return resp.StatusCode, nil, fmt.Errorf("a message of the hub's answer to %s is over %d bytes", m.Method, faceMaxMessage)
		case !got && (err == io.EOF || errors.As(err, &rpcErr) && errors.Is(err, jsonrpc.ErrParse)):
			// The decoder stopped where the JSON did: the rest of the
			// start is read for the error to quote.
			io.Copy(head, io.LimitReader(resp.Body, faceMaxHead))
			return resp.StatusCode, head.Bytes(), nil
		case err == io.EOF:
			return resp.StatusCode, nil, fmt.Errorf("the hub's answer to %s ended before its response", m.Method)
		case errors.As(err, &rpcErr) && !errors.Is(err, jsonrpc.ErrParse):
			// JSON that is no JSON-RPC message is skipped, as on a
			// stream.
		default:
			return resp.StatusCode, nil, fmt.Errorf("reading the hub's answer to %s: %w", m.Method, err)
		}
	}
}

// faceMaxMessage bounds one message of the hub's answer to a stateless
// request, as faceMaxLine bounds one of the client's lines; a variable
// only so that tests can send messages over it without sending 32 MiB.
var faceMaxMessage = faceMaxLine

// faceMaxHead bounds the start of a JSON body the face keeps for an error
// that quotes it.
const faceMaxHead = 64 << 10

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
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
	for _, t := range tools {
		name, _ := jsonrpc.StringMember(t, "name")
		if hs, err := jsonrpc.ParamHeaders(t); err == nil && hs != nil {
			sf.params[name] = hs
		} else {
			delete(sf.params, name)
		}
	}
	if _, more := jsonrpc.Member(result, "nextCursor"); !more {
		sf.listed = true
	}
}

// learnTools makes sure the tools have been listed before a call, when the
// client calls one before it listed them through the face: the hub refuses
// a call without the Mcp-Param headers its tool asks for. The face lists
// them itself, once for every call waiting, on a goroutine of its own (a
// call cancelled meanwhile stops waiting, not the listing), under the
// call's protocol version, capabilities and client info. A listing the hub
// refused counts as done (a call that needed the headers gets the hub's
// refusal saying so); one that did not reach the hub is tried again by the
// next call.
func (sf *statelessFace) learnTools(ctx context.Context, call *jsonrpc.Message) {
	sf.mu.Lock()
	if sf.listed {
		sf.mu.Unlock()
		return
	}
	done := sf.listing
	if done == nil {
		done = make(chan struct{})
		sf.listing = done
		meta := json.RawMessage(`{}`)
		for _, k := range []string{jsonrpc.MetaProtocolVersion, jsonrpc.MetaClientCapabilities, jsonrpc.MetaClientInfo} {
			if v, ok := jsonrpc.MetaMember(call.Params, k); ok {
				meta, _ = jsonrpc.SetMember(meta, k, v)
			}
		}
		sf.f.bg.Add(1)
		go func() {
			defer sf.f.bg.Done()
			answered := sf.listAll(meta)
			sf.mu.Lock()
			sf.listing = nil
			sf.listed = sf.listed || answered
			sf.mu.Unlock()
			close(done)
		}()
	}
	sf.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// listAll lists every tool under meta for their Mcp-Param headers, and
// reports whether the hub answered (with the list, or a refusal).
func (sf *statelessFace) listAll(meta json.RawMessage) bool {
	params, _ := jsonrpc.SetMember(json.RawMessage(`{}`), "_meta", meta)
	cursor := ""
	for range maxFaceListPages {
		p := params
		if cursor != "" {
			p, _ = jsonrpc.SetMember(p, "cursor", jsonrpc.Quote(cursor))
		}
		var res json.RawMessage
		var rpcErr *jsonrpc.Error
		_, _, err := sf.exchange(sf.f.ctx, jsonrpc.NewRequest(jsonrpc.IntID(-1), "tools/list", p), func(msg *jsonrpc.Message, _ []byte) bool {
			if msg.IsResponse() {
				res, rpcErr = msg.Result, msg.Error
			}
			return msg.IsResponse()
		})
		switch {
		case err != nil:
			sf.f.log.Debug("could not list the tools for their Mcp-Param headers", "err", err)
			return false
		case rpcErr != nil || res == nil:
			sf.f.log.Debug("the hub refused to list the tools for their Mcp-Param headers", "err", rpcErr)
			return true
		}
		sf.note(res)
		if cursor, _ = jsonrpc.StringMember(res, "nextCursor"); cursor == "" {
			return true
		}
	}
	return true
}

// maxFaceListPages bounds the pages of the face's own listing.
const maxFaceListPages = 100

// post sends m to the hub. A POST that never reached it waits for a hub to
// answer and goes there, at most faceMaxResends times; one the hub refuses
// with 401 goes again once when the token in force has changed since.
func (sf *statelessFace) post(ctx context.Context, m *jsonrpc.Message) (*http.Response, error) {
	body := m.Encode()
	retoken := true
	for resends := 0; ; resends++ {
		t := sf.current()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL(sf.f.cfg.Path), bytes.NewReader(body))
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
		resp, err := t.Do(req)
		switch {
		case err == nil && resp.StatusCode == http.StatusUnauthorized && retoken && sf.tokenChanged(ctx, t):
			retoken = false
			resp.Body.Close()
			continue
		case err == nil, !errors.Is(err, hubclient.ErrNoHub), ctx.Err() != nil:
			return resp, err
		case resends >= faceMaxResends:
			return nil, fmt.Errorf("the request did not reach the hub in %d tries: %w", resends+1, err)
		}
		if err := sf.waitHub(ctx, t); err != nil {
			return nil, err
		}
	}
}

// tokenChanged reports whether the hub's token in force now differs from
// the one t sent (auth turned on, or the token file replaced, which the hub
// applies at once), and makes the new one the target's.
func (sf *statelessFace) tokenChanged(ctx context.Context, t hubclient.Target) bool {
	fresh, err := sf.f.cfg.Find(ctx)
	if err != nil || fresh.Token == t.Token {
		return false
	}
	sf.f.log.Info("the hub's token changed; sending the registry's token in force now")
	sf.mu.Lock()
	sf.target = fresh
	sf.mu.Unlock()
	return true
}

// current is where the hub answered last.
func (sf *statelessFace) current() hubclient.Target {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.target
}

// waitHub waits for a hub to answer after one at failed did not, unless
// another request found it meanwhile. Requests share one wait (reachHub,
// which starts a hub this face started again); each stops waiting when its
// ctx ends. A hub that stays away past giveUp fails this request and every
// later one, and ends the face.
func (sf *statelessFace) waitHub(ctx context.Context, failed hubclient.Target) error {
	sf.mu.Lock()
	select {
	case <-sf.failed:
		sf.mu.Unlock()
		return sf.err
	default:
	}
	if sf.target != failed {
		sf.mu.Unlock()
		return nil // found by a request that waited first
	}
	w := sf.wait
	if w == nil {
		w = &hubWait{done: make(chan struct{})}
		sf.wait = w
		sf.f.bg.Add(1)
		go func() {
			defer sf.f.bg.Done()
			t, err := sf.f.hub.reachHub(time.Now().Add(sf.f.cfg.GiveUp))
			sf.mu.Lock()
			sf.wait, w.err = nil, err
			switch {
			case err == nil:
				sf.target = t
				sf.f.log.Info("the hub answers again", "url", t.URL(sf.f.cfg.Path))
			case sf.f.ctx.Err() == nil:
				sf.err = err
				close(sf.failed)
			}
			sf.mu.Unlock()
			close(w.done)
		}()
	}
	sf.mu.Unlock()
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
