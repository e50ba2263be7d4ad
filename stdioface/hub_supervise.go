package stdioface

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
)

// Keeping the connection to the hub alive: the supervisor replaces a
// connection that ended or cannot reach the hub with one that resumes the
// same session, waiting for the hub (and starting it again, when this face
// started it) for up to Options.GiveUp.

// reportOutage says that connection gen cannot reach the hub. The first
// report for the current connection begins its replacement; callers then
// wait in connAfter.
func (h *faceHub) reportOutage(gen int) {
	h.mu.Lock()
	begin := gen == h.gen && !h.swapping && h.fatal == nil && h.f.ctx.Err() == nil
	if begin {
		h.swapping = true
	}
	h.mu.Unlock()
	if begin {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

// startSupervising starts supervise. close waits for it from now on: the
// flag is set before the goroutine exists, so a shutdown right after the
// handshake cannot miss it.
func (h *faceHub) startSupervising() {
	h.mu.Lock()
	h.supervises = true
	h.mu.Unlock()
	go h.supervise()
}

// supervise replaces the connection whenever it ends or is reported unable
// to reach the hub, until the face shuts down or gives up.
func (h *faceHub) supervise() {
	defer close(h.supervised)
	for {
		h.mu.Lock()
		conn, gen, swapping := h.conn, h.gen, h.swapping
		h.mu.Unlock()
		if !swapping {
			select {
			case <-conn.Done():
				h.f.log.Warn("the connection to the hub ended; reconnecting", "err", conn.Err())
				h.reportOutage(gen)
			case <-h.kick:
			case <-h.f.ctx.Done():
				return
			}
			continue
		}
		if err := h.swap(conn); err != nil {
			h.mu.Lock()
			h.fatal = err
			close(h.up)
			h.mu.Unlock()
			if h.f.ctx.Err() == nil {
				close(h.failed) // run returns the error, which is printed
			}
			return
		}
	}
}

// swap closes the old connection without ending its session, waits for the
// hub to answer again and connects anew, resuming the session.
func (h *faceHub) swap(old *client.Conn) error {
	h.mu.Lock()
	oldTr := h.tr
	h.mu.Unlock()
	oldTr.abandon()
	old.Close()
	h.plain.CloseIdleConnections()
	h.f.log.Info("the hub cannot be reached; waiting for it")
	deadline := time.Now().Add(h.f.cfg.GiveUp)
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	for {
		t, err := h.reachHub(deadline)
		if err != nil {
			return err
		}
		h.mu.Lock()
		gen := h.gen + 1
		h.mu.Unlock()
		conn, tr, err := h.dial(h.f.ctx, gen, t, h.resumeState())
		if err == nil {
			h.install(conn, tr, gen, t)
			h.f.log.Info("reconnected to the hub", "resumed_requests", len(conn.Resumed()))
			return nil
		}
		if h.f.ctx.Err() != nil {
			return h.f.ctx.Err()
		}
		h.f.log.Warn("could not reconnect to the hub", "err", err)
		if time.Now().After(deadline) {
			return fmt.Errorf("could not reconnect to the hub within %s: %w", h.f.cfg.GiveUp, err)
		}
		if !sleepFor(h.f.ctx, delay.next()) {
			return h.f.ctx.Err()
		}
	}
}

// reachHub waits until a hub answers, with jittered backoff from 100 ms to
// 2 s. A hub this face started is started again once it has been gone for
// reviveAfter.
func (h *faceHub) reachHub(deadline time.Time) (hubclient.Target, error) {
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	down := time.Now()
	var revived time.Time
	var lastErr string
	for {
		t, err := h.f.cfg.Find(h.f.ctx)
		if err == nil {
			return t, nil
		}
		if h.f.ctx.Err() != nil {
			return hubclient.Target{}, h.f.ctx.Err()
		}
		var wrong *wrongAnswerError
		if msg := err.Error(); errors.As(err, &wrong) && msg != lastErr {
			h.f.log.Warn("the hub does not answer as it should", "err", err)
			lastErr = msg
		} else if !errors.Is(err, hubclient.ErrNoHub) {
			h.f.log.Debug("the hub does not answer yet", "err", err)
		}
		if h.f.cfg.Revive != nil && time.Since(down) >= h.f.cfg.ReviveAfter && time.Since(revived) >= faceReviveEvery {
			revived = time.Now()
			h.f.log.Info("the hub this face started is gone; starting it again")
			if err := h.f.cfg.Revive(h.f.ctx); err != nil {
				h.f.log.Warn("could not start the hub again", "err", err)
			}
			continue
		}
		if time.Now().After(deadline) {
			return hubclient.Target{}, fmt.Errorf("no hub has answered for %s: %w", h.f.cfg.GiveUp, err)
		}
		if !sleepFor(h.f.ctx, delay.next()) {
			return hubclient.Target{}, h.f.ctx.Err()
		}
	}
}

func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
