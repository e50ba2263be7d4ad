// Package httphdr decides which HTTP headers a user may add to mcphub's
// requests to a remote server (the registry's headers, --header on the
// command line).
//
// Some headers are not configuration but part of how a message is framed,
// routed or tied to its MCP session. A user value for one of them would
// break the exchange rather than configure it: a second Transfer-Encoding
// or Content-Length makes the request ambiguous on the wire, and a fixed
// Mcp-Session-Id would send every call into someone else's session. The
// registry, the command line and the client all ask this one package.
package httphdr

import (
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// Errors of Check; wrap-compatible with errors.Is.
var (
	ErrManaged      = errors.New("mcphub sets this header itself")
	ErrInvalidName  = errors.New("not an HTTP header name")
	ErrInvalidValue = errors.New("the value holds a line break or NUL, which an HTTP header cannot hold")
)

// managed are the headers mcphub and net/http set themselves, in canonical
// form: framing (Content-Length, Transfer-Encoding, TE, Trailer), encoding
// (Accept-Encoding: a user value turns off net/http's transparent gzip, so
// a compressed answer would reach the JSON parser; Content-Encoding would
// misdescribe the body), routing (Host), the connection (Connection,
// Keep-Alive, Proxy-Connection, Upgrade), and what the MCP transports send
// on every request (Accept, Content-Type, Mcp-Session-Id,
// MCP-Protocol-Version, Last-Event-ID).
var managed = []string{
	"Accept", "Accept-Encoding", "Connection", "Content-Encoding", "Content-Length", "Content-Type",
	"Host", "Keep-Alive", "Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// Managed reports whether name is a header mcphub sets itself, in any case.
func Managed(name string) bool {
	return slices.Contains(managed, textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)))
}

// Check reports whether a header may be added to upstream requests: its
// name is an RFC 9110 token that mcphub does not manage, and its value
// cannot end the header early.
func Check(name, value string) error {
	switch {
	case !ValidName(name):
		return fmt.Errorf("%q: %w; use letters, digits and -", name, ErrInvalidName)
	case Managed(name):
		return fmt.Errorf("%q: %w; remove it", name, ErrManaged)
	case strings.ContainsAny(value, "\r\n\x00"):
		return fmt.Errorf("%q: %w", name, ErrInvalidValue)
	}
	return nil
}

// ValidName reports whether name is an RFC 9110 token.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// ParseArg reads a header given on the command line, as curl writes it
// ("Name: value") or as mcphub's other KEY=VALUE flags do ("Name=value").
// Whichever separator comes first after a valid name wins, so values may
// hold either character. The header is checked as Check does.
func ParseArg(arg string) (name, value string, err error) {
	i := strings.IndexAny(arg, ":=")
	if i <= 0 {
		return "", "", fmt.Errorf("%q: want Name: value or Name=value", arg)
	}
	name, value = strings.TrimSpace(arg[:i]), arg[i+1:]
	if arg[i] == ':' {
		value = strings.TrimSpace(value)
	}
	if err := Check(name, value); err != nil {
		return "", "", err
	}
	return name, value, nil
}
