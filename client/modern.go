package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The stateless era (2026-07-28) on the client side. A connection probes
// with server/discover before initialize, as the revision asks a dual-era
// client to; when the server speaks it, every request carries the version
// and capabilities in _meta (and Mcp-Method/Mcp-Name over HTTP), there is
// no session, and list changes and resource updates come on a
// subscriptions/listen stream the connection keeps open.
//
// To its user the connection looks the same in both eras: the session
// era's requests it no longer has are answered here (ping as
// server/discover, logging/setLevel as the level put in each request's
// _meta, resources/subscribe and unsubscribe as the listen stream's
// resourceSubscriptions), and Initialize returns a result built from
// server/discover.

// discoverWait bounds the wait for server/discover's answer before the
// connection falls back to initialize: a session-era server may answer a
// request before initialize with an error, or not at all.
const discoverWait = 10 * time.Second

// modernState is what a stateless connection keeps in place of a session.
type modernState struct {
	on      atomic.Bool // set once, by becomeModern
	mu      sync.Mutex
	legacy  bool                             // a session was initialized: the era is known
	level   string                           // for requests whose _meta names none
	subs    map[string]bool                  // resources the listen stream subscribes to
	caps    json.RawMessage                  // the server's, to choose the listen filter
	restart chan struct{}                    // wakes the listen loop to reopen with new filters
	params  map[string][]jsonrpc.ParamHeader // tool → arguments mirrored in headers
}

func (m *modernState) sessionEra() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.legacy
}

func (m *modernState) setLegacy() {
	m.mu.Lock()
	m.legacy = true
	m.mu.Unlock()
}

// Modern reports whether the connection speaks the stateless era.
func (c *Conn) Modern() bool { return c.modern.on.Load() }

// errNotModern is discover's report of a server that does not speak the
// stateless era: the connection falls back to initialize.
var errNotModern = errors.New("the server does not speak 2026-07-28")

// discover sends server/discover and, when the server answers as a
// 2026-07-28 server, returns its result as an initialize result would
// read. Any other answer (an error, a result without 2026-07-28 among its
// versions, no answer within discoverWait) is errNotModern, wrapped with
// what was seen, unless ctx ended.
func (c *Conn) discover(ctx context.Context, info Implementation, caps json.RawMessage) (*InitializeResult, error) {
	pctx, cancel := context.WithTimeout(ctx, discoverWait)
	defer cancel()
	params := fmt.Appendf(nil, `{"_meta":{%s:%s,%s:%s,%s:{"name":%s,"version":%s}}}`,
		jsonrpc.Quote(jsonrpc.MetaProtocolVersion), jsonrpc.Quote(jsonrpc.Version20260728),
		jsonrpc.Quote(jsonrpc.MetaClientCapabilities), caps,
		jsonrpc.Quote(jsonrpc.MetaClientInfo), jsonrpc.Quote(info.Name), jsonrpc.Quote(info.Version))
	raw, err := c.Call(pctx, "server/discover", params)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeUnsupportedProtocolVersion && offersModern(rpcErr.Data) {
		// A server may refuse a first request for its own reasons while
		// naming 2026-07-28 among its versions: asked again, once.
		raw, err = c.Call(pctx, "server/discover", params)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var he *HTTPError
		switch {
		case errors.As(err, &he) && (he.Status == 401 || he.Status == 403):
			return nil, err // not an answer about eras
		case errors.As(err, &rpcErr) && (rpcErr.Code == jsonrpc.CodeHeaderMismatch || rpcErr.Code == jsonrpc.CodeMissingRequiredCapability):
			// Only a server of the stateless era says these: its
			// refusal is the answer, not a reason to try initialize.
			return nil, err
		case errors.As(err, &he), errors.As(err, &rpcErr), errors.Is(err, context.DeadlineExceeded):
			// A status, a JSON-RPC error, or silence: a session-era
			// server, as the revision tells a dual-era client to read it.
			return nil, fmt.Errorf("%w: %w", errNotModern, err)
		}
		return nil, err // the server could not be reached at all
	}
	var d struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		ServerInfo        *Implementation `json:"serverInfo"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo *Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || !slices.Contains(d.SupportedVersions, jsonrpc.Version20260728) {
		return nil, fmt.Errorf("%w: server/discover answered %s", errNotModern, c.excerpt(string(raw), false, 200))
	}
	res := &InitializeResult{ProtocolVersion: jsonrpc.Version20260728, Capabilities: d.Capabilities, Instructions: d.Instructions,
		SupportedVersions: d.SupportedVersions}
	switch {
	case d.Meta.ServerInfo != nil:
		res.ServerInfo = *d.Meta.ServerInfo
	case d.ServerInfo != nil:
		res.ServerInfo = *d.ServerInfo
	}
	if len(res.Capabilities) == 0 || res.Capabilities[0] != '{' {
		res.Capabilities = json.RawMessage(`{}`)
	}
	// Raw is what a session-era client of this server through the hub
	// is given as its initialize result.
	out := fmt.Appendf(nil, `{"protocolVersion":%s,"capabilities":%s,"serverInfo":{"name":%s,"version":%s}`,
		jsonrpc.Quote(res.ProtocolVersion), res.Capabilities, jsonrpc.Quote(res.ServerInfo.Name), jsonrpc.Quote(res.ServerInfo.Version))
	if res.Instructions != "" {
		out = append(out, `,"instructions":`...)
		out = jsonrpc.AppendString(out, res.Instructions)
	}
	res.Raw = append(out, '}')
	return res, nil
}

// offersModern reports whether an UnsupportedProtocolVersion error's data
// names 2026-07-28 among the server's versions.
func offersModern(data json.RawMessage) bool {
	var d struct {
		Supported []string `json:"supported"`
	}
	return json.Unmarshal(data, &d) == nil && slices.Contains(d.Supported, jsonrpc.Version20260728)
}

// keepValidTools returns a tools/list result of a stateless server without
// the tools whose x-mcp-header annotations a client must not honour
// (SEP-2243: such a tool is left out, the others kept), each left out with
// a warning that says why; it records which arguments of the others travel
// in headers too. A result nothing is left out of comes back as it is, and
// the tools kept are not re-encoded.
func (c *Conn) keepValidTools(result json.RawMessage) json.RawMessage {
	var tools []json.RawMessage
	if raw, ok := jsonrpc.Member(result, "tools"); !ok || json.Unmarshal(raw, &tools) != nil {
		return result
	}
	var kept []json.RawMessage
	c.modern.mu.Lock()
	if c.modern.params == nil {
		c.modern.params = map[string][]jsonrpc.ParamHeader{}
	}
	for _, t := range tools {
		name, _ := jsonrpc.StringMember(t, "name")
		hs, err := jsonrpc.ParamHeaders(t)
		if hs == nil {
			delete(c.modern.params, name)
		} else {
			c.modern.params[name] = hs
		}
		if err != nil {
			c.log.Warn("a tool is left out of tools/list: its x-mcp-header cannot be sent", "tool", name, "err", err)
			continue
		}
		kept = append(kept, t)
	}
	c.modern.mu.Unlock()
	if len(kept) == len(tools) {
		return result
	}
	list := jsonrpc.AppendArray(nil, kept)
	out, err := jsonrpc.SetMember(result, "tools", list)
	if err != nil {
		return result
	}
	return out
}

// paramHeaders sets the Mcp-Param-* headers of a tools/call, for the
// annotations its tool's listing had.
func (c *Conn) paramHeaders(h http.Header, params json.RawMessage) {
	name, _ := jsonrpc.StringMember(params, "name")
	c.modern.mu.Lock()
	hs := c.modern.params[name]
	c.modern.mu.Unlock()
	if len(hs) > 0 {
		args, _ := jsonrpc.Member(params, "arguments")
		jsonrpc.SetParamHeaders(h, hs, args)
	}
}

// CallAnswering is Call for a client that answers the server's requests
// for input itself: an input_required result is answered through the
// Handler (each input as the request it stands for) and the call made
// again with the answers, until it completes.
func (c *Conn) CallAnswering(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := c.Call(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return jsonrpc.Rounds(ctx, params, res, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		return c.Call(ctx, method, p)
	}, func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		if c.handler == nil {
			return nil, fmt.Errorf("nothing answers %s", m)
		}
		return c.handler.HandleRequest(ctx, jsonrpc.NewRequest(nil, m, p), nil)
	})
}

// becomeModern switches the connection to the stateless era after a
// successful discover and opens the listen stream.
func (c *Conn) becomeModern(res *InitializeResult) {
	c.modern.mu.Lock()
	if c.modern.on.Load() {
		c.modern.mu.Unlock()
		return
	}
	c.modern.on.Store(true)
	c.modern.caps = res.Capabilities
	c.modern.restart = make(chan struct{}, 1)
	if c.modern.subs == nil {
		c.modern.subs = map[string]bool{}
	}
	c.modern.mu.Unlock()
	if v, ok := c.t.(versioned); ok {
		v.setProtocolVersion(jsonrpc.Version20260728)
	}
	c.setInit(res)
	c.handlers.Go(c.listenLoop)
}

// modernLocal answers what the stateless era removed and the connection
// keeps itself: the log level, and the resources the listen stream
// subscribes to. handled reports that method was one of them.
func (c *Conn) modernLocal(method string, params json.RawMessage) (handled bool, err error) {
	m := &c.modern
	switch method {
	case "logging/setLevel":
		level, _ := jsonrpc.StringMember(params, "level")
		m.mu.Lock()
		m.level = level
		m.mu.Unlock()
		return true, nil
	case "resources/subscribe", "resources/unsubscribe":
		uri, _ := jsonrpc.StringMember(params, "uri")
		if uri == "" {
			return true, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.uri is required")
		}
		m.mu.Lock()
		res, _ := jsonrpc.Member(m.caps, "resources")
		if v, _ := jsonrpc.Member(res, "subscribe"); string(v) != "true" {
			m.mu.Unlock()
			return true, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "the server offers no resource subscriptions")
		}
		on := method == "resources/subscribe"
		changed := m.subs[uri] != on
		if on {
			m.subs[uri] = true
		} else {
			delete(m.subs, uri)
		}
		m.mu.Unlock()
		if changed {
			select {
			case m.restart <- struct{}{}:
			default:
			}
		}
		return true, nil
	}
	return false, nil
}

// withModernMeta sets the _meta members a stateless request carries:
// the version, and the client's capabilities, info and log level unless
// the request names its own (those of the client the hub relays for).
func (c *Conn) withModernMeta(params json.RawMessage) (json.RawMessage, error) {
	meta, ok := jsonrpc.Member(params, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage(`{}`)
	}
	has := map[string]bool{}
	jsonrpc.Members(meta, func(k []byte, _ json.RawMessage) { has[string(k)] = true })
	set := func(key string, v json.RawMessage) error {
		var err error
		meta, err = jsonrpc.SetMember(meta, key, v)
		return err
	}
	if err := set(jsonrpc.MetaProtocolVersion, jsonrpc.Quote(jsonrpc.Version20260728)); err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "malformed _meta")
	}
	if !has[jsonrpc.MetaClientCapabilities] {
		set(jsonrpc.MetaClientCapabilities, c.capabilities())
	}
	if !has[jsonrpc.MetaClientInfo] {
		info := c.clientInfo()
		set(jsonrpc.MetaClientInfo, fmt.Appendf(nil, `{"name":%s,"version":%s}`, jsonrpc.Quote(info.Name), jsonrpc.Quote(info.Version)))
	}
	if !has[jsonrpc.MetaLogLevel] {
		c.modern.mu.Lock()
		level := c.modern.level
		c.modern.mu.Unlock()
		if level != "" {
			set(jsonrpc.MetaLogLevel, jsonrpc.Quote(level))
		}
	}
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	out, err := jsonrpc.SetMember(params, "_meta", meta)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object")
	}
	return out, nil
}

// listenFilter is the listen stream's filter for the server's capabilities
// and the resources subscribed to, "" when there is nothing to listen for.
func (m *modernState) listenFilter() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, kind := range []struct{ cap, key string }{{"tools", "toolsListChanged"}, {"prompts", "promptsListChanged"}, {"resources", "resourcesListChanged"}} {
		c, _ := jsonrpc.Member(m.caps, kind.cap)
		if v, _ := jsonrpc.Member(c, "listChanged"); string(v) == "true" {
			parts = append(parts, string(jsonrpc.Quote(kind.key))+":true")
		}
	}
	if len(m.subs) > 0 {
		uris, _ := json.Marshal(slices.Sorted(maps.Keys(m.subs)))
		parts = append(parts, `"resourceSubscriptions":`+string(uris))
	}
	if len(parts) == 0 {
		return ""
	}
	out := "{"
	for i, p := range parts {
		if i > 0 {
			out += ","
		}
		out += p
	}
	return out + "}"
}

// listenLoop keeps a subscriptions/listen request open while the
// connection lives, reopening it when its filter changes or it ends (after
// a pause that grows while it keeps failing).
func (c *Conn) listenLoop() {
	m := &c.modern
	pause := time.Second
	for c.ctx.Err() == nil {
		filter := m.listenFilter()
		if filter == "" {
			select {
			case <-m.restart:
				continue
			case <-c.ctx.Done():
				return
			}
		}
		ctx, cancel := context.WithCancel(c.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, "subscriptions/listen", json.RawMessage(`{"notifications":`+filter+`}`))
			done <- err
		}()
		began := time.Now()
		select {
		case <-m.restart:
			cancel()
			<-done
			continue
		case err := <-done:
			cancel()
			if c.ctx.Err() != nil {
				return
			}
			select {
			case <-c.transport().done():
				return // the connection is lost; a new one opens its own
			default:
			}
			if time.Since(began) > time.Minute {
				pause = time.Second
			}
			c.log.Debug("the subscriptions/listen stream ended; reopening it", "err", err, "in", pause)
			if !sleepCtx(c.ctx, pause) {
				return
			}
			pause = min(2*pause, 30*time.Second)
		case <-c.ctx.Done():
			cancel()
			<-done
			return
		}
	}
}
