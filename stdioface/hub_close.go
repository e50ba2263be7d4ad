package stdioface

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
)

// Ending the hub session when the face shuts down: the connection's own
// close, or a DELETE once the hub answers again when the connection was
// being replaced.

// close ends the hub session at shutdown: the current connection is closed,
// which deletes the session. A connection being replaced was closed already,
// without deleting it: then the session it had is deleted once the hub
// answers, unless the hub was given up on.
func (h *faceHub) close() {
	h.mu.Lock()
	supervises := h.supervises
	h.mu.Unlock()
	if supervises {
		<-h.supervised
	}
	h.mu.Lock()
	conn, swapping, st := h.conn, h.swapping, h.state
	h.mu.Unlock()
	gaveUp := false
	select {
	case <-h.failed:
		gaveUp = true
	default:
	}
	switch {
	case conn != nil && !swapping:
		conn.Close()
	case conn != nil && st.SessionID != "" && !gaveUp:
		h.deleteSession(st)
	}
	h.plain.CloseIdleConnections()
}

// deleteSession ends the hub session of st with a DELETE, waiting for the
// hub to answer for as long as calls in flight may take at stdin's end
// (the drain time). A hub that no longer knows the session, or does not
// let sessions be deleted, has nothing left to end; one that refuses the
// DELETE otherwise is not asked again.
func (h *faceHub) deleteSession(st client.State) {
	ctx, cancel := context.WithTimeout(context.Background(), h.f.cfg.Drain)
	defer cancel()
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	for {
		t, err := h.f.cfg.Find(ctx)
		if err == nil {
			err = h.sendDelete(ctx, t, st)
			if err == nil {
				h.f.log.Debug("ended the hub session the connection being replaced had")
				return
			}
			var he *client.HTTPError
			if errors.As(err, &he) {
				h.f.log.Warn("could not end the hub session", "err", err)
				return
			}
		}
		if !sleepFor(ctx, delay.next()) {
			h.f.log.Warn("the hub did not answer in time to end the session; it ends when the hub expires it", "waited", h.f.cfg.Drain)
			return
		}
	}
}

// sendDelete sends the DELETE that ends session st to the hub at t.
func (h *faceHub) sendDelete(ctx context.Context, t hubclient.Target, st client.State) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.URL(h.f.cfg.Path), nil)
	if err != nil {
		return fmt.Errorf("the DELETE of the hub session: %w", err)
	}
	req.Header.Set("Mcp-Session-Id", st.SessionID)
	if st.ProtocolVersion != "" {
		req.Header.Set("MCP-Protocol-Version", st.ProtocolVersion)
	}
	resp, err := t.Do(req)
	if err != nil {
		return fmt.Errorf("the DELETE of the hub session: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299,
		resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusMethodNotAllowed:
		return nil
	}
	return &client.HTTPError{Method: http.MethodDelete, URL: t.URL(h.f.cfg.Path), Status: resp.StatusCode}
}
