package client

import (
	"encoding/json"
	"net/url"

	"github.com/mcphub/mcphub/internal/redact"
)

// What an upstream says in its own words (an HTTP error body, a line of
// stderr, a JSON-RPC error message, a transport error quoting a malformed
// response) leaves the client room only through scrub: an upstream may
// echo the credentials mcphub sent it (a 401 body that repeats the
// Authorization header) or print its own environment.

// secretValues lists the values of the server's configuration that must
// never be shown: its env values, its header values, and the password and
// query values of its URL.
func (cfg *Config) secretValues() []string {
	var out []string
	for _, v := range cfg.Env {
		out = append(out, v)
	}
	for _, v := range cfg.Headers {
		out = append(out, v)
	}
	if u, err := url.Parse(cfg.URL); err == nil && cfg.URL != "" {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	return out
}

// scrub masks secrets in upstream text; see internal/redact.
func (c *Conn) scrub(s string) string { return c.redactor.Text(s) }

// scrubJSON masks secrets in upstream JSON, such as an error's data. The
// masks keep it JSON; data that would not stay JSON is dropped rather than
// passed on unmasked.
func (c *Conn) scrubJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	clean := c.scrub(string(raw))
	if clean == string(raw) {
		return raw
	}
	if !json.Valid([]byte(clean)) {
		return nil
	}
	return json.RawMessage(clean)
}

// excerpt masks secrets in upstream text and shortens it to n bytes; cut
// says that s is already the start of a longer text.
func (c *Conn) excerpt(s string, cut bool, n int) string { return c.redactor.Excerpt(s, cut, n) }

// scrubErr returns err with its message scrubbed; errors.Is and errors.As
// still see err.
func (c *Conn) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := c.scrub(msg); clean != msg {
		return redact.Reworded(err, clean)
	}
	return err
}
