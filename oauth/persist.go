package oauth

import (
	"encoding/json"
	"time"
)

// persist has the current grant written to the store (deleted when there
// is none) by a goroutine of its own, so that a slow store (a keychain
// that asks the user) holds up neither requests nor Close; writes
// coalesce into the latest grant. The channel is closed once a write
// covering this change is done.
func (a *Authorizer) persist() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.written == nil {
		a.written = make(chan struct{})
	}
	done := a.written
	a.dirty = true
	if !a.writing {
		a.writing, a.idle = true, make(chan struct{})
		go a.writeLoop(a.idle)
	}
	return done
}

// writeLoop writes the grant until no change is left to write, then
// closes idle. Close waits for it a while (see settle).
func (a *Authorizer) writeLoop(idle chan struct{}) {
	defer close(idle)
	for {
		a.mu.Lock()
		if !a.dirty {
			a.writing = false
			a.mu.Unlock()
			return
		}
		g, done := a.grant, a.written
		a.dirty, a.written = false, nil
		a.mu.Unlock()
		var err error
		if st := a.cfg.Store; st != nil {
			if g == nil {
				err = st.Delete(a.key)
			} else {
				var data []byte
				if data, err = json.Marshal(g); err == nil {
					err = st.Save(a.key, data)
				}
			}
		}
		a.mu.Lock()
		a.stale = err != nil
		a.mu.Unlock()
		if err != nil {
			a.log.Warn("could not store the OAuth grant; it lasts as long as this connection", "err", a.scrubErr(err))
		}
		// Told before done closes: whoever waits for the write (a sign-in)
		// then knows the others were told too.
		if a.cfg.OnChange != nil {
			a.cfg.OnChange()
		}
		close(done)
	}
}

// settle waits, at most limit, for the grant's last change to be written:
// a refresh just before Close must not lose the rotated refresh token, but
// a keychain that waits for the user must not hold Close for ever.
func (a *Authorizer) settle(limit time.Duration) {
	a.mu.Lock()
	idle := a.idle
	a.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		a.log.Warn("closing before the OAuth grant was stored; the store did not answer", "waited", limit)
	}
}
