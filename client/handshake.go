package client

// The MCP handshake: how Start finds the era a server speaks and opens the
// session: server/discover or initialize, then notifications/initialized;
// the capabilities and client info declared upstream; the wait for an
// answer that never comes (NoAnswerError); and the server's initialize
// result, kept for Initialize and for resuming a session. The stateless
// era's discover lives in modern.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// defaultCapabilities are declared upstream when Config.Capabilities is nil:
// mcphub relays sampling, elicitation and roots to its own clients.
var defaultCapabilities = json.RawMessage(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}`)

// versioned is a transport that sends the negotiated protocol version on
// every later request.
type versioned interface {
	setProtocolVersion(v string)
}

// handshake establishes the era and, for the session era, the session:
// initialize, then notifications/initialized.
func (c *Conn) handshake(ctx context.Context) error {
	return c.handshakeSince(ctx, time.Now())
}

// handshakeSince is handshake for a connection that began to start at
// began, which a wait for an answer that times out is measured from.
//
// Without a pinned ProtocolVersion the era is found as the revision asks a
// dual-era client to: over Streamable HTTP server/discover goes first, and
// any answer but a 2026-07-28 discover result falls back to initialize.
// Over stdio initialize goes first and server/discover follows only when
// the server refuses it: one process serves the hub alone, so a session
// costs it nothing, and it keeps the server-to-client requests that tools
// written for the session era need. The legacy HTTP+SSE transport
// predates the stateless era, and a session renewal keeps the era the
// first handshake found.
func (c *Conn) handshakeSince(ctx context.Context, began time.Time) error {
	offered := c.cfg.ProtocolVersion
	caps, info := c.capabilities(), c.clientInfo()
	t := c.transport()
	_, sse := t.(*legacy)
	_, stdio := t.(*stdioTransport)
	auto := offered == "" && !sse && !c.modern.sessionEra() && !c.cfg.SessionEra
	if (auto && !stdio) || jsonrpc.EraOf(offered) == jsonrpc.EraStateless {
		res, err := c.discover(ctx, info, caps)
		switch {
		case err == nil:
			c.becomeModern(res)
			return nil
		case offered != "" || !errors.Is(err, errNotModern):
			return fmt.Errorf("server/discover: %w", c.noAnswer(ctx, began, err))
		}
		c.log.Debug("the server does not speak 2026-07-28; initializing a session", "err", err)
	}
	if offered == "" {
		offered = jsonrpc.LatestSessionVersion
	}
	params := fmt.Appendf(nil, `{"protocolVersion":%s,"capabilities":%s,"clientInfo":{"name":%s,"version":%s}}`,
		jsonrpc.Quote(offered), caps, jsonrpc.Quote(info.Name), jsonrpc.Quote(info.Version))
	raw, err := c.Call(ctx, "initialize", params)
	var refused *jsonrpc.Error
	if err != nil && auto && errors.As(err, &refused) &&
		(stdio || refused.Code == jsonrpc.CodeUnsupportedProtocolVersion && offersModern(refused.Data)) {
		// A server of the stateless era alone refuses initialize (over
		// HTTP, one that said so after a discover that failed meanwhile).
		res, derr := c.discover(ctx, info, caps)
		if derr == nil {
			c.becomeModern(res)
			return nil
		}
		c.log.Debug("server/discover after a refused initialize", "err", derr)
	}
	if err != nil && c.cfg.SessionEra && refusesSessions(err) {
		return fmt.Errorf("initialize: %w: %w", ErrNoSessionEra, err)
	}
	if err != nil {
		return fmt.Errorf("initialize: %w", c.noAnswer(ctx, began, err))
	}
	if s, ok := t.(*streamable); ok && c.cfg.SessionEra {
		if id, _ := s.session(); id == "" {
			// A stateless server answers initialize for each request on
			// its own: it can send no request back in the middle of a
			// call, which is what a session-era connection is for.
			return fmt.Errorf("initialize: %w: it answered without an Mcp-Session-Id", ErrNoSessionEra)
		}
	}
	res, err := parseInitialize(raw)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if !jsonrpc.IsSessionVersion(res.ProtocolVersion) && c.cfg.SessionEra {
		return fmt.Errorf("%w: %w: the server answered %q to initialize", ErrNoSessionEra, ErrVersion, c.excerpt(res.ProtocolVersion, false, 64))
	}
	if !jsonrpc.IsSessionVersion(res.ProtocolVersion) {
		return fmt.Errorf("%w: the server answered %q to mcphub's %q; mcphub speaks %v", ErrVersion, c.excerpt(res.ProtocolVersion, false, 64), offered, jsonrpc.SessionVersions)
	}
	c.modern.setLegacy()
	if v, ok := c.t.(versioned); ok {
		v.setProtocolVersion(res.ProtocolVersion)
	}
	c.setInit(res)
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if s, ok := c.t.(interface{ initialized() }); ok {
		s.initialized()
	}
	return nil
}

// refusesSessions reports whether initialize's failure is the server's
// answer that it keeps no sessions: the statuses a server of the stateless
// era alone answers an initialize POST with (400, 404, 405), or a
// JSON-RPC error that says it does not know the method or that version.
// A refusal that may pass (429, a server busy, a network failure, a
// timeout) says nothing about eras: the connection is tried again.
func refusesSessions(err error) bool {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		switch rpcErr.Code {
		case jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest, jsonrpc.CodeUnsupportedProtocolVersion:
			return true
		}
	}
	var he *HTTPError
	return errors.As(err, &he) &&
		(he.Status == http.StatusBadRequest || he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed)
}

// capabilities are the client capabilities declared upstream.
func (c *Conn) capabilities() json.RawMessage {
	if c.cfg.Capabilities != nil {
		return c.cfg.Capabilities
	}
	return defaultCapabilities
}

// clientInfo is the client's name and version as declared upstream.
func (c *Conn) clientInfo() Implementation {
	if c.cfg.ClientInfo.Name == "" {
		return Implementation{Name: "mcphub", Version: "dev"}
	}
	return c.cfg.ClientInfo
}

// noAnswer turns a deadline that ended the wait for initialize into a
// NoAnswerError: how long mcphub waited and, for a stdio server, the last
// lines of its stderr, where a server stuck before it can answer (npx
// behind a proxy that refuses it) usually says why. Other errors pass
// unchanged.
func (c *Conn) noAnswer(ctx context.Context, began time.Time, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	waited := time.Since(began)
	if d, ok := ctx.Deadline(); ok && ctx.Err() != nil && d.After(began) {
		waited = d.Sub(began) // the budget, not when the wait noticed its end
	}
	e := &NoAnswerError{Waited: roundWait(waited), Err: err}
	if s, ok := c.transport().(interface{ stderrLines() []string }); ok {
		e.Stderr = s.stderrLines()
	}
	return e
}

// roundWait rounds a wait for a message: to a tenth of a second from 0.9
// seconds on ("2s", "1.5s"), else to the millisecond.
func roundWait(d time.Duration) time.Duration {
	if d >= 900*time.Millisecond {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func parseInitialize(raw json.RawMessage) (*InitializeResult, error) {
	var res InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("malformed initialize result: %w", err)
	}
	if len(res.Capabilities) == 0 || res.Capabilities[0] != '{' {
		res.Capabilities = json.RawMessage(`{}`)
	}
	res.Raw = raw
	return &res, nil
}

func (c *Conn) setInit(res *InitializeResult) {
	c.mu.Lock()
	c.init = res
	c.mu.Unlock()
}

// Initialize returns the server's initialize result, nil before Start.
func (c *Conn) Initialize() *InitializeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init
}
