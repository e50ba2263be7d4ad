package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// initialize creates a session and answers initialize itself: the
// negotiated version, the capabilities of the endpoint's view, mcphub's
// serverInfo and the upstreams' instructions.
func (e *edge) initialize(w http.ResponseWriter, r *http.Request, endpoint string, m *jsonrpc.Message) {
	if err := e.control.storeProblem(); err != nil {
		// A session the store cannot keep would be lost to the next
		// restart, and to every other replica.
		e.log.Warn("refused a session: the store cannot be reached", "endpoint", endpointName(endpoint), "err", err)
		retryLater(w, "Service Unavailable: the hub's session store cannot be reached; retry shortly (mcphub status on the hub says why)")
		return
	}
	s, result, err := e.sessions.create(r.Context(), endpoint, m)
	var capErr *errSessionCap
	switch {
	case errors.As(err, &capErr):
		e.log.Warn("refused a session", "endpoint", endpointName(endpoint), "reason", capErr.msg)
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: "+capErr.msg)
		return
	case errors.As(err, new(*errStoreDown)):
		e.log.Warn("refused a session: the store did not take it", "endpoint", endpointName(endpoint), "err", err)
		retryLater(w, "Service Unavailable: the hub's session store cannot be reached; retry shortly (mcphub status on the hub says why)")
		return
	case err != nil:
		return // the client went away while servers were starting
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonrpc.NewResponse(m.ID, result).Encode())
}

// errStoreDown is why a new session was refused: the store did not take it.
type errStoreDown struct{ err error }

func (e *errStoreDown) Error() string { return "the store did not take the session: " + e.err.Error() }
func (e *errStoreDown) Unwrap() error { return e.err }

// create starts a session for an initialize request and returns it with the
// initialize result. It first waits for servers that are still starting, so
// the capabilities and lists the client sees are whole.
func (set *sessionSet) create(ctx context.Context, endpoint string, m *jsonrpc.Message) (*session, json.RawMessage, error) {
	requested, _ := jsonrpc.StringMember(m.Params, "protocolVersion")
	caps, _ := jsonrpc.Member(m.Params, "capabilities")
	info, _ := jsonrpc.Member(m.Params, "clientInfo")
	version := jsonrpc.NegotiateVersion(requested)
	if !set.servers.warmed(ctx) {
		return nil, nil, ctx.Err()
	}
	s := newSession(set.ctx, endpoint, version, info, caps)
	s.principal = callerOf(ctx).principal()
	if err := set.add(s); err != nil {
		s.close()
		return nil, nil, err
	}
	if err := set.store.saveSession(ctx, s, true); err != nil {
		// A session the store did not take would be lost to a restart
		// and to the other replicas: it is refused, as a store known to
		// be down refuses it, and its save, which may still be queued,
		// is undone by a delete queued after it.
		set.mu.Lock()
		delete(set.byID, s.id)
		set.mu.Unlock()
		s.close()
		set.store.deleteSession(s.id)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err() // the client went away
		}
		return nil, nil, &errStoreDown{err}
	}
	set.fanout.applyLevels()
	name, _ := jsonrpc.StringMember(info, "name")
	set.log.Info("session started", "session", s.id, "endpoint", endpointName(endpoint), "client", name, "protocol", version)
	return s, set.servers.initializeResult(endpoint, version, set.version), nil
}

// initializeResult builds the initialize result of an endpoint's view.
func (ss *serverSet) initializeResult(endpoint, version, hubVersion string) json.RawMessage {
	if serverEndpoint(endpoint) {
		if e := ss.get(endpoint); e != nil {
			if raw := e.up.Initialize(); raw != nil {
				return passThroughInitialize(raw, version)
			}
		}
	}
	var subscribe, completions bool
	var instructions []string
	reg := ss.registry()
	var prof *registry.Profile
	if name, ok := endpointProfile(endpoint); ok {
		prof = reg.Profile(name)
	}
	for _, e := range ss.sorted() {
		if !endpointSees(reg, endpoint, e.spec) {
			continue
		}
		sum := e.initSummary()
		if sum == nil {
			continue
		}
		subscribe = subscribe || sum.subscribe
		completions = completions || sum.completions
		if sum.instructions != "" {
			instructions = append(instructions, "## "+e.spec.Name+"\n"+sum.instructions)
		}
	}
	capsJSON := `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true`
	if subscribe {
		capsJSON += `,"subscribe":true`
	}
	capsJSON += `},"logging":{}`
	if completions {
		capsJSON += `,"completions":{}`
	}
	capsJSON += `}`
	out := fmt.Appendf(nil, `{"protocolVersion":%s,"capabilities":%s,"serverInfo":{"name":"mcphub","version":%s}`,
		jsonrpc.Quote(version), capsJSON, jsonrpc.Quote(hubVersion))
	text := ""
	if prof != nil && prof.Mode == registry.ModeSearch {
		text = searchInstructions
	}
	if len(instructions) > 0 {
		if text != "" {
			text += "\n\n"
		}
		text += "mcphub serves the tools, prompts and resources of several MCP servers. Their own instructions follow.\n\n" +
			strings.Join(instructions, "\n\n")
	}
	if text != "" {
		out = append(out, `,"instructions":`...)
		out = jsonrpc.AppendString(out, text)
	}
	return append(out, '}')
}

// initSummary is what the merged initialize result takes from one
// upstream's initialize result.
type initSummary struct {
	raw          json.RawMessage // the result it was read from
	subscribe    bool            // resources.subscribe
	completions  bool
	instructions string // trimmed
}

// initSummary reads the upstream's initialize result once per result: with
// thousands of servers, decoding every one on every initialize cost tens of
// milliseconds. nil while the upstream has none.
func (e *serverEntry) initSummary() *initSummary {
	raw := e.up.Initialize()
	if raw == nil {
		return nil
	}
	if c := e.init.Load(); c != nil && bytes.Equal(c.raw, raw) {
		return c
	}
	var ui struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		Instructions string                     `json:"instructions"`
	}
	json.Unmarshal(raw, &ui)
	c := &initSummary{raw: raw, instructions: strings.TrimSpace(ui.Instructions)}
	if res, ok := ui.Capabilities["resources"]; ok {
		v, ok := jsonrpc.Member(res, "subscribe")
		c.subscribe = ok && string(v) == "true"
	}
	_, c.completions = ui.Capabilities["completions"]
	e.init.Store(c)
	return c
}

// passThroughInitialize answers a per-server endpoint with the upstream's own
// result (its capabilities, serverInfo and instructions) at the version the
// hub negotiated with this client, declaring logging, which the hub handles.
func passThroughInitialize(raw json.RawMessage, version string) json.RawMessage {
	out, err := jsonrpc.SetMember(raw, "protocolVersion", jsonrpc.Quote(version))
	if err != nil {
		return raw
	}
	if caps, ok := jsonrpc.Member(out, "capabilities"); ok {
		if _, has := jsonrpc.Member(caps, "logging"); !has {
			if c, err := jsonrpc.SetMember(caps, "logging", json.RawMessage(`{}`)); err == nil {
				if o, err := jsonrpc.SetMember(out, "capabilities", c); err == nil {
					out = o
				}
			}
		}
	}
	return out
}
