package jsonrpc

import "slices"

// The MCP protocol revisions mcphub knows, oldest first.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

// Versions lists every MCP protocol revision mcphub knows, oldest first.
// Revision strings are dates, so their order is also their string order.
var Versions = []string{Version20241105, Version20250326, Version20250618, Version20251125, Version20260728}

// SessionVersions are the revisions of the session era: the ones negotiated by
// initialize and carried in MCP-Protocol-Version on later requests. mcphub
// serves and speaks all of them.
var SessionVersions = []string{Version20241105, Version20250326, Version20250618, Version20251125}

// LatestSessionVersion is the newest session-era revision: what mcphub offers
// upstream and answers a client that asks for a revision it does not know.
const LatestSessionVersion = Version20251125

// DefaultHTTPVersion is the revision a Streamable HTTP server assumes when a
// request carries no MCP-Protocol-Version header (the 2025-06-18 rule).
const DefaultHTTPVersion = Version20250326

// Era is a protocol era: how a revision establishes its context.
type Era int

// The two eras of MCP.
const (
	// EraUnknown is the era of a string that is no known revision.
	EraUnknown Era = iota
	// EraSession revisions negotiate once with initialize and keep a session.
	EraSession
	// EraStateless revisions carry version and capabilities in every request.
	EraStateless
)

// EraOf reports the era of a protocol revision.
func EraOf(version string) Era {
	switch {
	case slices.Contains(SessionVersions, version):
		return EraSession
	case version == Version20260728:
		return EraStateless
	}
	return EraUnknown
}

// IsSessionVersion reports whether version is a session-era revision mcphub
// supports.
func IsSessionVersion(version string) bool {
	return slices.Contains(SessionVersions, version)
}

// NegotiateVersion picks the revision a server answers an initialize request
// with: the client's own when supported, else the latest.
func NegotiateVersion(requested string) string {
	if IsSessionVersion(requested) {
		return requested
	}
	return LatestSessionVersion
}

// AtLeast reports whether revision v is the same as or newer than min. Both
// must be revision strings; their date form makes string order the right one.
func AtLeast(v, min string) bool { return v >= min }
