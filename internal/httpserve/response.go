package httpserve

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// holdLimit is how much body a response holds before its head is written:
// a response that ends within it goes out with a Content-Length, larger or
// flushed ones are chunked.
const holdLimit = 4 << 10

// response is the http.ResponseWriter and http.Flusher of one request.
type response struct {
	c      *conn
	req    *http.Request
	body   *reqBody
	header http.Header

	status        int   // fixed once set; 0 until then
	committed     bool  // the head is in the connection's buffer
	chunked       bool  // the body goes out in chunks
	contentLength int64 // the body's length once known, else -1
	written       int64 // body bytes accepted so far
	held          []byte
	closeAfter    bool // the connection closes after this response
}

// Header returns the header map the response will send.
func (w *response) Header() http.Header { return w.header }

// WriteHeader fixes the status. An informational status (1xx, except 101)
// is sent at once and another may follow, as net/http allows.
func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic("httpserve: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.status != 0 {
		w.c.srv.log.Debug("superfluous WriteHeader call", "path", w.req.URL.Path, "code", code)
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n")
		w.header.Write(w.c.bw)
		w.c.bw.WriteString("\r\n")
		w.c.bw.Flush()
		return
	}
	w.status = code
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			w.c.srv.log.Debug("dropped an invalid Content-Length", "path", w.req.URL.Path, "value", v)
			w.header.Del("Content-Length")
		}
	}
}

// bodyAllowed reports whether the status lets a body follow.
func (w *response) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

// Write adds to the body: held while small, then framed on the connection.
func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.committed {
		if len(w.held)+len(p) <= holdLimit {
			w.held = append(w.held, p...)
			return len(p), w.sendIfWhole()
		}
		if err := w.commit(false, p); err != nil {
			return 0, err
		}
	}
	n, err := w.writeBody(p)
	if err == nil {
		err = w.sendIfWhole()
	}
	return n, err
}

// sendIfWhole sends the response at once when its body has all the
// Content-Length the handler declared: the client need not wait for
// whatever the handler does before it returns. (So a handler that then
// panics with http.ErrAbortHandler has already answered.)
func (w *response) sendIfWhole() error {
	if w.contentLength < 0 || w.written != w.contentLength {
		return nil
	}
	if !w.committed {
		if err := w.commit(false, nil); err != nil {
			return err
		}
	}
	return w.c.bw.Flush()
}

// Flush sends the head and everything written so far.
func (w *response) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed && w.commit(false, nil) != nil {
		return
	}
	w.c.bw.Flush()
}

// commit writes the head, choosing the body's framing, then the held body.
// final means the handler has returned, so the held body is all of it;
// next is what is about to be written after the held body, if anything.
func (w *response) commit(final bool, next []byte) error {
	w.committed = true
	h := w.header
	h.Del("Transfer-Encoding") // the framing is the server's to choose
	switch {
	case !w.bodyAllowed():
		h.Del("Content-Length")
	case w.contentLength >= 0:
	case w.req.Method == http.MethodHead:
		// No body follows, so no framing either; a handler that wrote
		// its whole (discarded) body tells its length, as net/http does.
		if final && w.written > 0 {
			h.Set("Content-Length", strconv.FormatInt(w.written, 10))
		}
	case final:
		w.contentLength = int64(len(w.held))
		h.Set("Content-Length", strconv.Itoa(len(w.held)))
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		h.Del("Content-Length")
		h.Set("Transfer-Encoding", "chunked")
	default:
		// HTTP/1.0 has no chunks: the body ends when the connection does.
		w.closeAfter = true
	}
	if _, ok := h["Content-Type"]; !ok && len(w.held)+len(next) > 0 && w.bodyAllowed() {
		// Sniffed from the body's start, as net/http does.
		start := w.held
		if n := min(len(next), 512-len(start)); n > 0 {
			start = append(start[:len(start):len(start)], next[:n]...)
		}
		h.Set("Content-Type", http.DetectContentType(start))
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{httpDate(time.Now())}
	}
	if hasToken(h.Values("Connection"), "close") {
		w.closeAfter = true
	}
	if w.body != nil && w.body.expect && !w.body.continued {
		// The client waits for a 100 Continue that can no longer come; the
		// body it may still send cannot be told apart from the next
		// request, so the connection ends with this response.
		w.closeAfter = true
	}
	if (w.closeAfter || w.req.Close) && !hasToken(h.Values("Connection"), "close") {
		h.Add("Connection", "close")
	}
	bw := w.c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.status))
	bw.WriteString(" ")
	bw.WriteString(http.StatusText(w.status))
	bw.WriteString("\r\n")
	h.Write(bw)
	bw.WriteString("\r\n")
	held := w.held
	w.held = nil
	if len(held) > 0 {
		if _, err := w.writeBody(held); err != nil {
			return err
		}
	}
	return w.c.writeErr()
}

// writeBody frames p on the connection's buffer.
func (w *response) writeBody(p []byte) (int, error) {
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	n, err := bw.Write(p)
	if w.chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	return n, err
}

// finish completes the response after the handler returned.
func (w *response) finish() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		if err := w.commit(true, nil); err != nil {
			return err
		}
	}
	if w.chunked {
		w.c.bw.WriteString("0\r\n\r\n")
	}
	if w.contentLength >= 0 && w.written < w.contentLength && w.req.Method != http.MethodHead && w.bodyAllowed() {
		// The body is shorter than promised; the client can only tell
		// by the connection closing.
		w.closeAfter = true
	}
	return w.c.bw.Flush()
}

// hasToken reports whether a comma-separated header lists token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// date is a Date header value and the second it names.
type date struct {
	sec int64
	s   string
}

var lastDate atomic.Pointer[date]

// httpDate formats now for the Date header, once a second rather than once
// a response.
func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &date{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	lastDate.Store(d)
	return d.s
}
