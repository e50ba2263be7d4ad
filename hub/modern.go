package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// The 2026-07-28 revision is stateless: no initialize and no session; each
// request carries its protocol version and client capabilities in _meta,
// and is answered on its own POST. The hub serves it beside the session era
// on every endpoint, choosing by how each request speaks (modernRequest).

// modernRequest reports whether a POSTed message speaks the stateless era:
// its MCP-Protocol-Version header says 2026-07-28, or its _meta names a
// protocol version and the header names no session-era one. Everything else
// (initialize, requests of a session) is served as before.
func modernRequest(r *http.Request, m *jsonrpc.Message) bool {
	hv := r.Header.Get("MCP-Protocol-Version")
	if jsonrpc.EraOf(hv) == jsonrpc.EraStateless {
		return true
	}
	if jsonrpc.IsSessionVersion(hv) {
		return false
	}
	_, has := jsonrpc.MetaMember(m.Params, jsonrpc.MetaProtocolVersion)
	return has
}

// modernRoutes are the methods of the stateless era; the session era's
// table serves those they share. What the revision removed (initialize,
// ping, logging/setLevel, resources/subscribe and unsubscribe) is not here
// and is answered 404 with -32601, as any unknown method.
var modernRoutes = map[string]bool{
	"server/discover":          true,
	"subscriptions/listen":     true,
	"tools/list":               true,
	"prompts/list":             true,
	"resources/list":           true,
	"resources/templates/list": true,
	"tools/call":               true,
	"prompts/get":              true,
	"resources/read":           true,
	"completion/complete":      true,
}

// modernHeaderNamed are the methods whose Mcp-Name header repeats a member
// of params.
var modernHeaderNamed = map[string]string{
	"tools/call":     "name",
	"prompts/get":    "name",
	"resources/read": "uri",
}

// Caching hints (SEP-2549) on list and read results. The hub's lists
// follow its upstreams live, so a client may reuse them briefly; a client
// that must see changes at once listens for them (subscriptions/listen).
const (
	listTTL      = 10 * time.Second
	cacheScope   = "private"
	modernMaxLog = 200 // bounds a client-chosen value in an error message
)

// modernCall is one stateless request: its checked _meta and the
// per-request state a session would otherwise hold.
type modernCall struct {
	m        *jsonrpc.Message
	version  string
	caps     json.RawMessage
	info     json.RawMessage
	logLevel string // "" = the client asked for no log messages
}

// serveModern serves one message of the stateless era.
// release gives back the slot admit took for the call; it may be called
// more than once.
func (e *edge) serveModern(w http.ResponseWriter, r *http.Request, endpoint string, m *jsonrpc.Message, release func()) {
	switch m.Kind() {
	case jsonrpc.KindNotification:
		// The revision defines no client notification over HTTP (closing
		// a stream cancels its request); one is accepted and dropped.
		w.WriteHeader(http.StatusAccepted)
		return
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"Invalid Request: a 2026-07-28 client sends no responses; server requests come as input_required results"))
		return
	}
	mc, rpcErr, status := checkModern(r, m)
	if rpcErr != nil {
		release()
		writeRPCError(w, status, m.ID, rpcErr)
		return
	}
	e.sessions.modern(w, r, endpoint, mc, release)
}

// checkModern checks a stateless request's _meta and headers, in the order
// the revision gives: the required _meta members (-32602), the version
// header against _meta (-32020), the version itself (-32022), the method
// (404, -32601), then the Mcp-Method and Mcp-Name headers (-32020).
func checkModern(r *http.Request, m *jsonrpc.Message) (*modernCall, *jsonrpc.Error, int) {
	meta, ok := jsonrpc.Member(m.Params, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			"Invalid params: a 2026-07-28 request carries _meta with "+jsonrpc.MetaProtocolVersion+" and "+jsonrpc.MetaClientCapabilities), http.StatusBadRequest
	}
	mc := &modernCall{m: m}
	var hasVersion, hasCaps bool
	jsonrpc.Members(meta, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case jsonrpc.MetaProtocolVersion:
			mc.version, hasVersion = jsonrpc.String(v)
		case jsonrpc.MetaClientCapabilities:
			mc.caps, hasCaps = v, len(v) > 0 && v[0] == '{'
		case jsonrpc.MetaClientInfo:
			mc.info = v
		case jsonrpc.MetaLogLevel:
			mc.logLevel, _ = jsonrpc.String(v)
		}
	})
	switch {
	case !hasVersion:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: _meta lacks "+jsonrpc.MetaProtocolVersion+" (a string)"), http.StatusBadRequest
	case !hasCaps:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params: _meta lacks "+jsonrpc.MetaClientCapabilities+" (an object)"), http.StatusBadRequest
	}
	if hv := r.Header.Get("MCP-Protocol-Version"); hv != mc.version {
		return nil, jsonrpc.NewError(jsonrpc.CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version "+
			strconv.Quote(logValue(hv))+" is not the _meta protocol version "+strconv.Quote(logValue(mc.version))), http.StatusBadRequest
	}
	if jsonrpc.EraOf(mc.version) != jsonrpc.EraStateless {
		return nil, unsupportedVersion(mc.version), http.StatusBadRequest
	}
	if mc.logLevel != "" && levelRank(mc.logLevel) < 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: unknown log level %q in _meta", logValue(mc.logLevel)), http.StatusBadRequest
	}
	if !modernRoutes[m.Method] {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s (the 2026-07-28 revision has no such method)", logValue(m.Method)), http.StatusNotFound
	}
	if hm := r.Header.Get("Mcp-Method"); hm != m.Method {
		return nil, jsonrpc.Errorf(jsonrpc.CodeHeaderMismatch, "Header mismatch: Mcp-Method %q is not the body's method %q", logValue(hm), logValue(m.Method)), http.StatusBadRequest
	}
	if member, ok := modernHeaderNamed[m.Method]; ok {
		want, _ := jsonrpc.StringMember(m.Params, member)
		hn, err := jsonrpc.DecodeHeaderValue(r.Header.Get("Mcp-Name"))
		if err != nil || hn != want {
			return nil, jsonrpc.Errorf(jsonrpc.CodeHeaderMismatch, "Header mismatch: Mcp-Name is not params.%s %q", member, logValue(want)), http.StatusBadRequest
		}
	}
	return mc, nil, 0
}

// unsupportedVersion is the -32022 error for a version the hub does not
// serve, listing those it does.
func unsupportedVersion(requested string) *jsonrpc.Error {
	data := []byte(`{"supported":`)
	data = appendVersions(data)
	data = append(data, `,"requested":`...)
	data = jsonrpc.AppendString(data, requested)
	data = append(data, '}')
	return jsonrpc.NewError(jsonrpc.CodeUnsupportedProtocolVersion, "Unsupported protocol version").WithData(data)
}

// appendVersions appends the versions the hub serves, newest first.
func appendVersions(dst []byte) []byte {
	dst = append(dst, '[')
	for i := len(jsonrpc.Versions) - 1; i >= 0; i-- {
		dst = jsonrpc.AppendString(dst, jsonrpc.Versions[i])
		if i > 0 {
			dst = append(dst, ',')
		}
	}
	return append(dst, ']')
}

// modern runs one stateless request: it gets a session that lives as long
// as the request (never listed, stored or resumed) so the router serves it
// as it serves a session's, and its answer is JSON, or an SSE stream
// without event ids once the call has something to say before its result.
//
// A new call keeps its slot of its caller's concurrent calls (release) for
// as long as it runs, which may outlast this request (it may ask for
// input); anything else gives it back on return.
func (set *sessionSet) modern(w http.ResponseWriter, r *http.Request, endpoint string, mc *modernCall, release func()) {
	defer func() {
		if release != nil {
			release()
		}
	}()
	m := mc.m
	if m.Method == "server/discover" {
		if !set.servers.warmed(r.Context()) {
			return
		}
		writeJSONReply(w, http.StatusOK, m.ID, jsonrpc.NewResponse(m.ID, set.servers.discoverResult(endpoint, set.version)).Encode())
		return
	}
	if m.Method == "subscriptions/listen" {
		set.listen(w, r, endpoint, mc)
		return
	}
	name := ""
	if member, ok := modernHeaderNamed[m.Method]; ok {
		name, _ = jsonrpc.StringMember(m.Params, member)
	}
	if m.Method == "tools/call" {
		if view := set.servers.view(endpoint); view != nil {
			if tool, ok := view.tool(name); ok {
				args, _ := jsonrpc.Member(m.Params, "arguments")
				if e := checkParamHeaders(r.Header, tool.item, args); e != nil {
					writeRPCError(w, http.StatusBadRequest, m.ID, e)
					return
				}
			}
		}
	}
	out := newModernReply(w, set.servers.registry().Hub.PostSSE && parseAccept(acceptHeader(r)).mode >= acceptSSEOnly)
	if mc.logLevel != "" {
		defer set.holdLevel(mc.logLevel)()
	}
	var call *mrtrCall
	if state, _ := jsonrpc.StringMember(m.Params, "requestState"); set.parked.ours(state) {
		// A retry of a call that asked for input: its answers go to the
		// waiting server requests, and the call goes on.
		call = set.parked.take(state, callerOf(r.Context()).principal())
		if call == nil || call.endpoint != endpoint || call.method != m.Method || call.name != name {
			if call != nil {
				call.cancel(errClientCancelled)
			}
			writeJSONReply(w, http.StatusOK, m.ID, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
				"Invalid params: requestState names no call waiting for input here (expired, used, or altered); make the request again without it")).Encode())
			return
		}
		responses, _ := jsonrpc.Member(m.Params, "inputResponses")
		call.setSink(out)
		call.answer(responses)
	} else {
		call = newMRTRCall(set.ctx, endpoint, m.Method, name, parseClientCaps(mc.caps))
		call.principal = callerOf(r.Context()).principal()
		call.setSink(out)
		s := newCallSession(call.ctx, endpoint, mc.version, mc.info, mc.caps)
		peer := &modernPeer{sessionPeer: sessionPeer{s: s, send: call.emit}, level: mc.logLevel, call: call}
		keep := release
		release = nil
		if !set.calls.Go(func() {
			defer keep()
			defer s.close()
			call.res, call.err = set.router.route(call.ctx, s, m, peer)
			close(call.done)
			set.parked.forget(call)
		}) {
			keep()
			call.cancel(errSessionEnded)
			httpError(w, http.StatusServiceUnavailable, "Service Unavailable: mcphub is stopping")
			return
		}
	}
	set.awaitModern(w, r, endpoint, m, call, out)
}

// awaitModern answers a stateless call: with its result, or, when the
// server asked for input, with input_required naming what it asked (the
// asks of mrtrGather gathered into one round) and the call parked for the
// client's retry. Closing the stream before either cancels the call.
func (set *sessionSet) awaitModern(w http.ResponseWriter, r *http.Request, endpoint string, m *jsonrpc.Message, call *mrtrCall, out *modernReply) {
	stop := context.AfterFunc(r.Context(), func() { call.cancel(errClientCancelled) })
	defer call.clearSink(out)
	// The call may outlast the response's write deadline; each write sets
	// its own.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	finish := func(body []byte, status int) { out.finish(status, body) }
	for {
		select {
		case data := <-out.queue:
			out.write(data)
		case <-call.done:
			stop()
			if r.Context().Err() != nil {
				return
			}
			if capName := call.missingCapability(); capName != "" {
				e := jsonrpc.Errorf(jsonrpc.CodeMissingRequiredCapability, "Missing required client capability: the server asked for %s, which the client did not declare", capName).
					WithData(fmt.Appendf(nil, `{"requiredCapabilities":{%s:{}}}`, jsonrpc.Quote(capName)))
				finish(jsonrpc.NewErrorResponse(m.ID, e).Encode(), http.StatusBadRequest)
				return
			}
			if call.err != nil {
				e, status := modernError(call.err, endpoint)
				finish(jsonrpc.NewErrorResponse(m.ID, e).Encode(), status)
				return
			}
			finish(jsonrpc.NewResponse(m.ID, modernResult(m.Method, call.res)).Encode(), http.StatusOK)
			return
		case <-call.wake:
			gather := time.NewTimer(mrtrGather)
			select {
			case <-gather.C:
			case <-call.done:
				gather.Stop()
			}
			if !call.pending() || call.missingCapability() != "" {
				// Answered meanwhile, or the call ended, or it is ending
				// for want of a capability: look again.
				continue
			}
			if !stop() {
				return // the client left: the call is cancelled
			}
			call.clearSink(out)
			state := set.parked.park(call, set.servers.registry().Hub.MaxSessions)
			finish(jsonrpc.NewResponse(m.ID, call.inputRequired(state)).Encode(), http.StatusOK)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// modernError is rpcError for a stateless client: a resource that does not
// exist is -32602 with the URI (the revision retired -32002), and a
// missing client capability is 400.
func modernError(err error, endpoint string) (*jsonrpc.Error, int) {
	e, status := rpcError(err, endpoint)
	switch e.Code {
	case codeResourceNotFound:
		e = jsonrpc.NewError(jsonrpc.CodeInvalidParams, e.Message).WithData(e.Data)
	case jsonrpc.CodeMissingRequiredCapability:
		status = http.StatusBadRequest
	}
	return e, status
}

// modernResult is a result as a 2026-07-28 client reads it: with resultType
// (results of session-era servers have none: they are complete), and the
// caching hints on lists and reads.
func modernResult(method string, res json.RawMessage) json.RawMessage {
	out := res
	if _, ok := jsonrpc.Member(out, "resultType"); !ok {
		// A session-era server that asks for input in its result (the Go
		// SDK's, after one round of server requests) says so only by
		// inputRequests.
		rt := "complete"
		if _, asks := jsonrpc.Member(out, "inputRequests"); asks {
			rt = "input_required"
		}
		if o, err := jsonrpc.SetMember(out, "resultType", jsonrpc.Quote(rt)); err == nil {
			out = o
		}
	}
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		if rt, _ := jsonrpc.StringMember(out, "resultType"); rt != "complete" {
			break
		}
		if _, ok := jsonrpc.Member(out, "ttlMs"); !ok {
			if o, err := jsonrpc.SetMember(out, "ttlMs", strconv.AppendInt(nil, listTTL.Milliseconds(), 10)); err == nil {
				out = o
			}
		}
		if _, ok := jsonrpc.Member(out, "cacheScope"); !ok {
			if o, err := jsonrpc.SetMember(out, "cacheScope", jsonrpc.Quote(cacheScope)); err == nil {
				out = o
			}
		}
	}
	return out
}

// discoverResult answers server/discover: the endpoint's capabilities,
// instructions and serverInfo as initialize would give them, with the
// versions the hub serves.
func (ss *serverSet) discoverResult(endpoint, hubVersion string) json.RawMessage {
	init := ss.initializeResult(endpoint, jsonrpc.Version20260728, hubVersion)
	out, err := jsonrpc.DeleteMember(init, "protocolVersion")
	if err != nil {
		return init
	}
	info, _ := jsonrpc.Member(out, "serverInfo")
	if out, err = jsonrpc.DeleteMember(out, "serverInfo"); err != nil {
		return init
	}
	out, _ = jsonrpc.SetMember(out, "supportedVersions", appendVersions(nil))
	if info != nil {
		if o, err := jsonrpc.SetMeta(out, jsonrpc.MetaServerInfo, info); err == nil {
			out = o
		}
	}
	out, _ = jsonrpc.SetMember(out, "ttlMs", strconv.AppendInt(nil, listTTL.Milliseconds(), 10))
	out, _ = jsonrpc.SetMember(out, "cacheScope", jsonrpc.Quote(cacheScope))
	return modernResult("server/discover", out)
}

// modernPeer takes what an upstream sends about a stateless call: progress
// for its token, log messages only at the level its _meta asked for (none
// without one), and requests for input, which the call asks its client
// for with input_required.
type modernPeer struct {
	sessionPeer
	level string
	call  *mrtrCall
}

func (p *modernPeer) Forwarded(json.RawMessage, string, json.RawMessage) {}

func (p *modernPeer) Notify(msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/message":
		level, _ := jsonrpc.StringMember(msg.Params, "level")
		if p.level == "" || !admits(p.level, level) {
			return
		}
	case "notifications/progress":
		if !p.advance(msg.Params) {
			return
		}
	default:
		return // nothing else relates to the request
	}
	p.send(msg.Encode())
}

func (p *modernPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if _, ok := modernHeaderNamed[p.call.method]; !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "a 2026-07-28 client answers %s only for tools/call, prompts/get and resources/read", method)
	}
	return p.call.ask(ctx, method, params)
}

// modernReply answers a stateless call: JSON, unless something is sent
// before the result and the client takes SSE; then an SSE stream without
// event ids (the revision does not resume streams), which the result ends.
// Only the handler's goroutine writes: what the upstream sends meanwhile
// waits in a bounded queue (dropped past it, as a client that does not read
// must not hold the upstream's reader), so nothing is written once the
// handler has returned.
type modernReply struct {
	w      http.ResponseWriter
	sse    bool
	queue  chan []byte
	sw     *sse.Writer // once streaming
	failed bool
}

// modernQueue bounds the messages waiting to be written on a stateless
// call's stream.
const modernQueue = 256

func newModernReply(w http.ResponseWriter, sse bool) *modernReply {
	return &modernReply{w: w, sse: sse, queue: make(chan []byte, modernQueue)}
}

// send queues a message for the stream; any goroutine may call it.
func (o *modernReply) send(data []byte) {
	if !o.sse {
		return // a JSON reply carries only the result
	}
	select {
	case o.queue <- data:
	default:
	}
}

// write writes one queued message, opening the stream first.
func (o *modernReply) write(data []byte) {
	if o.failed {
		return
	}
	if o.sw == nil {
		sseHeaders(o.w)
		o.sw = sse.NewWriter(flushWriter{o.w, http.NewResponseController(o.w)})
	}
	http.NewResponseController(o.w).SetWriteDeadline(time.Now().Add(writeTimeout))
	if o.sw.WriteEvent(sse.Event{Data: string(data), HasData: true}) != nil {
		o.failed = true
	}
}

// drain writes what is queued.
func (o *modernReply) drain() {
	for {
		select {
		case data := <-o.queue:
			o.write(data)
		default:
			return
		}
	}
}

// finish writes what is queued, then the response: the stream's last
// event, or the JSON body.
func (o *modernReply) finish(status int, body []byte) {
	o.drain()
	if o.sw != nil {
		o.write(body)
		return
	}
	http.NewResponseController(o.w).SetWriteDeadline(time.Now().Add(writeTimeout))
	o.w.Header().Set("Content-Type", "application/json")
	o.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	o.w.WriteHeader(status)
	o.w.Write(body)
}

// checkParamHeaders checks the Mcp-Param-{Name} headers of a tools/call
// against the arguments its tool's inputSchema marks with x-mcp-header
// (SEP-2243): each present, non-null argument must come with its header
// carrying the same value (base64 decoded; integers compared as numbers),
// and no header may stand for an argument that is not there. A tool whose
// annotations a client must not honour (and so leaves out) is not checked.
func checkParamHeaders(h http.Header, item, args json.RawMessage) *jsonrpc.Error {
	hs, err := jsonrpc.ParamHeaders(item)
	if err != nil {
		return nil
	}
	for _, p := range hs {
		name := "Mcp-Param-" + p.Header
		hv, sent := h[http.CanonicalHeaderKey(name)]
		v, ok := p.Arg(args)
		present := ok && string(v) != "null"
		switch {
		case !present && !sent:
			continue
		case !present:
			return jsonrpc.Errorf(jsonrpc.CodeHeaderMismatch, "Header mismatch: %s is sent but arguments.%s is not", name, strings.Join(p.Path, "."))
		case !sent:
			return jsonrpc.Errorf(jsonrpc.CodeHeaderMismatch, "Header mismatch: arguments.%s needs the %s header", strings.Join(p.Path, "."), name)
		}
		got, err := jsonrpc.DecodeHeaderValue(hv[0])
		if err != nil || !sameParam(got, v) {
			return jsonrpc.Errorf(jsonrpc.CodeHeaderMismatch, "Header mismatch: %s does not carry arguments.%s", name, strings.Join(p.Path, "."))
		}
	}
	return nil
}

// sameParam reports whether a header value carries an argument's value: a
// string as it is, a number as the same number, a boolean as true or false.
func sameParam(header string, v json.RawMessage) bool {
	switch {
	case v[0] == '"':
		s, _ := jsonrpc.String(v)
		return s == header
	case string(v) == "true" || string(v) == "false":
		return header == string(v)
	}
	a, err1 := strconv.ParseFloat(header, 64)
	b, err2 := strconv.ParseFloat(string(v), 64)
	return err1 == nil && err2 == nil && a == b
}
