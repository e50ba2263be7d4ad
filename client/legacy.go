package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/sse"
)

// legacy is the HTTP+SSE transport of protocol 2024-11-05: one long GET
// stream carries every server message, and the first event on it names the
// endpoint that client messages are POSTed to.
type legacy struct {
	c *Conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	doneState

	endpoint string
}

func newLegacy(c *Conn) *legacy {
	ctx, cancel := context.WithCancel(c.ctx)
	return &legacy{c: c, ctx: ctx, cancel: cancel, doneState: newDoneState()}
}

// start opens the SSE stream and waits for its endpoint event, which must
// resolve to the same origin as the stream's URL.
func (l *legacy) start(ctx context.Context) error {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, l.c.cfg.URL, nil)
	if err != nil {
		return err
	}
	l.c.setHeaders(req.Header)
	req.Header.Set("Accept", "text/event-stream")

	type opened struct {
		resp *http.Response
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		resp, err := l.c.do(req)
		ch <- opened{resp, err}
	}()
	var resp *http.Response
	select {
	case o := <-ch:
		if o.err != nil {
			return fmt.Errorf("GET %s: %w", redact.URL(l.c.cfg.URL), o.err)
		}
		resp = o.resp
	case <-ctx.Done():
		l.cancel()
		if o := <-ch; o.resp != nil {
			o.resp.Body.Close()
		}
		return ctx.Err()
	}
	if ae := authRequired(resp, http.MethodGet, redact.URL(l.c.cfg.URL)); ae != nil {
		resp.Body.Close()
		return ae
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ctype != "text/event-stream" {
		defer resp.Body.Close()
		return &HTTPError{Method: http.MethodGet, URL: redact.URL(l.c.cfg.URL), Status: resp.StatusCode, Body: "not an SSE stream: " + l.c.bodyExcerpt(resp.Body)}
	}

	endpoint := make(chan string, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer resp.Body.Close()
		err := l.read(resp.Body, endpoint)
		switch {
		case l.ctx.Err() != nil:
			l.finish(ErrClosed)
		case errors.Is(err, sse.ErrEventTooLarge):
			// The one stream that carries every response is lost: every
			// call in flight fails at once, with the reason.
			limit := l.c.maxMessage()
			l.c.log.Error("an event over the size limit ended the legacy SSE stream", "limit_bytes", limit)
			l.finish(fmt.Errorf("%w; it ended the SSE stream that carries every response (%w)", tooLarge(limit), ErrStreamFailed))
		default:
			l.c.log.Warn("the legacy SSE stream ended", "err", err)
			l.finish(fmt.Errorf("%w: the SSE stream ended: %v", ErrStreamFailed, err))
		}
	}()

	select {
	case ep := <-endpoint:
		target, err := l.resolve(ep)
		if err != nil {
			return err
		}
		l.endpoint = target
		return nil
	case <-l.done():
		return fmt.Errorf("GET %s: the stream ended before its endpoint event: %w", redact.URL(l.c.cfg.URL), l.err())
	case <-ctx.Done():
		return fmt.Errorf("GET %s: no endpoint event: %w", redact.URL(l.c.cfg.URL), ctx.Err())
	}
}

// resolve makes the endpoint event's URI absolute and refuses another origin:
// a server may not redirect the client's messages elsewhere.
func (l *legacy) resolve(ep string) (string, error) {
	base, err := url.Parse(l.c.cfg.URL)
	if err != nil {
		return "", err
	}
	ref, err := url.Parse(ep)
	if err != nil {
		// url's error quotes the event whole; only its reason is kept.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("the endpoint event %q is not a URI: %w", l.c.excerpt(ep, false, 200), err)
	}
	u := base.ResolveReference(ref)
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return "", fmt.Errorf("the endpoint event points at another origin (%s); refusing it", l.c.excerpt(u.Scheme+"://"+u.Host, false, 200))
	}
	return u.String(), nil
}

func (l *legacy) read(body io.Reader, endpoint chan<- string) error {
	r := sse.NewReader(body, l.c.maxMessage())
	for {
		ev, err := r.Next()
		if err != nil {
			return err
		}
		switch ev.Type {
		case "endpoint":
			select {
			case endpoint <- ev.Data:
			default: // a second endpoint event changes nothing
			}
		case "", "message":
			if ev.Data == "" {
				continue
			}
			m, err := jsonrpc.Decode([]byte(ev.Data))
			if err != nil {
				l.c.log.Warn("skipped an SSE event that is not a JSON-RPC message", "err", err)
				continue
			}
			l.c.active()
			l.c.deliver(m, nil)
		}
	}
}

func (l *legacy) send(ctx context.Context, _ *jsonrpc.Message, data []byte) error {
	select {
	case <-l.done():
		return l.err()
	default:
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, bytes.NewReader(data))
	if err != nil {
		return err
	}
	l.c.setHeaders(req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.c.do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) && l.ctx.Err() != nil {
			return ErrClosed
		}
		err = fmt.Errorf("POST %s: %w", redact.URL(l.endpoint), err)
		if ctx.Err() == nil {
			// Not the caller giving up: the server could not be reached.
			l.c.troubled(err)
		}
		return err
	}
	defer resp.Body.Close()
	if ae := authRequired(resp, http.MethodPost, redact.URL(l.endpoint)); ae != nil {
		l.c.troubled(ae)
		return ae
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &HTTPError{Method: http.MethodPost, URL: redact.URL(l.endpoint), Status: resp.StatusCode, Body: l.c.bodyExcerpt(resp.Body), Scope: insufficientScope(resp)}
	}
	l.c.active()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil
}

func (l *legacy) close() error {
	l.cancel()
	l.wg.Wait()
	l.finish(ErrClosed)
	return nil
}
