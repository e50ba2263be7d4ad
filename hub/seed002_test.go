package hub

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// seed002Registry has a prefixed server, an unprefixed one and a profile,
// so every kind of MCP endpoint the hub serves is in the table.
const seed002Registry = `
[servers.alpha]
command = "alpha-server"
[servers.beta]
command = "beta-server"
prefix = ""

[profiles.coding]
servers = ["alpha"]
`

// seed002Endpoints are the hub's MCP endpoints: the merged one, a
// server's own and a profile's.
var seed002Endpoints = []string{"/mcp", "/alpha/mcp", "/profiles/coding/mcp"}

// Session ids of the right form that name no session, and values that are
// not session ids this hub issues.
const (
	unknownSessionID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	notAUUID         = "not a uuid!"
	uuidVersion1     = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
)

// seedRow is one line of the status-code table: a request and the answer
// it must get. code is the JSON-RPC error code of an error answer (0: only
// that it is a JSON-RPC error); check looks at the rest.
type seedRow struct {
	name   string
	method string
	path   string
	kv     []string
	body   string
	status int
	code   int
	check  func(t *testing.T, r reply)
}

// TestSeed002StatusCodes is the status-code table of the Streamable HTTP
// bridge spec (seed 002) over every MCP endpoint the hub has: a session
// begins with initialize and its id is a version 4 UUID; an id of that form
// that names no session is 404; a value this hub never issues is 400 on
// every session-era POST, initialize included, and on GET and DELETE; GET
// and DELETE need an id; DELETE ends a session (204); batches are 400; the
// legacy SSE routes are 410, pointing at /mcp.
func TestSeed002StatusCodes(t *testing.T) {
	th := startHub(t, seed002Registry, map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("echo")),
		"beta":  newFake("beta").setList("tools/list", toolItems("hello")),
	})
	const post, get, del = http.MethodPost, http.MethodGet, http.MethodDelete
	var rows []seedRow
	for _, ep := range seed002Endpoints {
		live := th.connect(ep, "2025-11-25", `{}`)
		doomed := th.connect(ep, "2025-11-25", `{}`)
		other := seed002Endpoints[0]
		if ep == other {
			other = seed002Endpoints[1]
		}
		foreign := th.connect(other, "2025-11-25", `{}`)
		sid := func(id string, kv ...string) []string { return append([]string{"Mcp-Session-Id", id}, kv...) }
		row := func(name, method string, kv []string, body string, status, code int, check ...func(*testing.T, reply)) {
			r := seedRow{name: method + " " + ep + ": " + name, method: method, path: ep, kv: kv, body: body, status: status, code: code}
			if len(check) > 0 {
				r.check = check[0]
			}
			rows = append(rows, r)
		}
		init := initReq("2025-11-25", `{}`)

		// POST initialize: a new session, whatever well-formed id it carries.
		row("initialize without an id starts a session", post, nil, init, 200, 0, newSessionCheck(th, ep, ""))
		row("initialize with an unknown id starts a new session", post, sid(unknownSessionID), init, 200, 0, newSessionCheck(th, ep, unknownSessionID))
		row("initialize inside a session starts a new one", post, sid(live.sid), init, 200, 0, newSessionCheck(th, ep, live.sid))
		// POST initialize with an id this hub could not have issued.
		row("initialize with a malformed id", post, sid(notAUUID), init, 400, -32000, malformedCheck(notAUUID))
		row("initialize with a version 1 UUID", post, sid(uuidVersion1), init, 400, -32000, malformedCheck(uuidVersion1))
		row("initialize with a braced UUID", post, sid("{"+unknownSessionID+"}"), init, 400, -32000, malformedCheck(unknownSessionID))
		row("initialize with several different ids", post, sid(live.sid, "+Mcp-Session-Id", unknownSessionID), init, 400, -32000)
		row("initialize in a batch", post, nil, "["+init+"]", 400, -32600)

		// POST of a session's messages.
		row("request of the session", post, sid(live.sid, "Accept", "application/json"), ping, 200, 0)
		row("notification of the session", post, sid(live.sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, 202, 0)
		row("request without an id", post, nil, ping, 400, -32000)
		row("request with an unknown id", post, sid(unknownSessionID), ping, 404, -32001)
		row("request with another endpoint's session", post, sid(foreign.sid), ping, 404, -32001)
		row("request with a malformed id", post, sid(notAUUID), ping, 400, -32000, malformedCheck(notAUUID))
		row("notification with a malformed id", post, sid(notAUUID), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, -32000, malformedCheck(notAUUID))
		row("request with a version 1 UUID", post, sid(uuidVersion1), ping, 400, -32000, malformedCheck(uuidVersion1))
		row("batch", post, sid(live.sid), "["+ping+"]", 400, -32600)

		// A 2026-07-28 request has no session: a well-formed id is
		// ignored, as a modern-only server ignores it, and a malformed one
		// is refused as on every POST.
		row("2026-07-28 request with a malformed id", post, modernHeaders("server/discover", "", "Mcp-Session-Id", notAUUID, "Accept", "application/json"),
			modernBody(3, "server/discover", ""), 400, -32000, malformedCheck(notAUUID))
		row("2026-07-28 request with an unknown id", post, modernHeaders("server/discover", "", "Mcp-Session-Id", unknownSessionID, "Accept", "application/json"),
			modernBody(3, "server/discover", ""), 200, 0)

		// GET: the session's standalone stream.
		row("stream of the session", get, sid(live.sid), "", 200, 0)
		row("stream without an id", get, nil, "", 400, -32000)
		row("stream with an unknown id", get, sid(unknownSessionID), "", 404, -32001)
		row("stream with a malformed id", get, sid(notAUUID), "", 400, -32000, malformedCheck(notAUUID))

		// DELETE ends a session; its id is unknown afterwards.
		row("end without an id", del, nil, "", 400, -32000)
		row("end with a malformed id", del, sid(notAUUID), "", 400, -32000, malformedCheck(notAUUID))
		row("end an unknown session", del, sid(unknownSessionID), "", 404, -32001)
		row("end another endpoint's session", del, sid(foreign.sid), "", 404, -32001)
		row("end the session", del, sid(doomed.sid), "", 204, 0)
		row("request of the ended session", post, sid(doomed.sid), ping, 404, -32001)
		row("end the ended session", del, sid(doomed.sid), "", 404, -32001)
	}
	// The legacy HTTP+SSE routes are gone for good, with a pointer to the
	// Streamable HTTP endpoint.
	gone := func(endpoint string) func(*testing.T, reply) {
		return func(t *testing.T, r reply) {
			if !strings.Contains(string(r.body), endpoint) {
				t.Errorf("410 body %s does not point at %s", r.body, endpoint)
			}
		}
	}
	rows = append(rows,
		seedRow{name: "GET /beta/sse", method: get, path: "/beta/sse", status: 410, code: -32000, check: gone("/beta/mcp")},
		seedRow{name: "POST /beta/message", method: post, path: "/beta/message", body: ping, status: 410, code: -32000, check: gone("/beta/mcp")},
		seedRow{name: "POST /alpha/messages", method: post, path: "/alpha/messages", body: ping, status: 410, code: -32000, check: gone("/alpha/mcp")},
		seedRow{name: "GET /nope/sse: no such server", method: get, path: "/nope/sse", status: 404, code: -32001},
		seedRow{name: "POST /nope/mcp: no such server", method: post, path: "/nope/mcp", body: initReq("2025-11-25", `{}`), status: 404, code: -32001},
	)

	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := seedSend(th, row)
			if r.status != row.status {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, row.status)
			}
			if row.status >= 400 {
				rpcErr(t, r, row.code, "")
			}
			if row.check != nil {
				row.check(t, r)
			}
		})
	}
}

// seedSend makes a row's request. A GET that opens a stream is read only
// as far as its status and media type: the stream stays open.
func seedSend(th *testHub, row seedRow) reply {
	th.t.Helper()
	if row.method != http.MethodGet || row.status != http.StatusOK {
		return th.send(row.method, row.path, row.body, row.kv...)
	}
	s := th.open(row.method, row.path, row.body, row.kv...)
	defer s.stop()
	if ct := s.resp.Header.Get("Content-Type"); s.resp.StatusCode == http.StatusOK && ct != "text/event-stream" {
		th.t.Errorf("GET %s: Content-Type %q, want text/event-stream", row.path, ct)
	}
	return reply{status: s.resp.StatusCode, header: s.resp.Header}
}

// newSessionCheck checks an initialize answer: a JSON result and a new
// session whose id is a version 4 UUID, other than sent; the session is
// ended afterwards so the rows do not fill the endpoint's cap.
func newSessionCheck(th *testHub, endpoint, sent string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
		if m := r.msg(t); m.Result == nil {
			t.Errorf("initialize answered %s, want a result", r.body)
		}
		sid := r.header.Get("Mcp-Session-Id")
		u, err := uuid.Parse(sid)
		if err != nil || u.Version() != 4 || u.String() != sid {
			t.Errorf("Mcp-Session-Id = %q, want a version 4 UUID in canonical form", sid)
		}
		if sid == sent {
			t.Errorf("initialize with Mcp-Session-Id %s answered that same session", sent)
		}
		if end := th.send(http.MethodDelete, endpoint, "", "Mcp-Session-Id", sid); end.status != http.StatusNoContent {
			t.Errorf("ending the new session: %d %s", end.status, end.body)
		}
	}
}

// malformedCheck checks a 400 for a malformed id: it says what is wrong,
// opens no session, and does not quote the value the client sent.
func malformedCheck(sent string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		e := rpcErr(t, r, -32000, "null")
		if !strings.Contains(e.Message, "Mcp-Session-Id") || !strings.Contains(e.Message, "UUID") {
			t.Errorf("message %q does not say the Mcp-Session-Id is not a UUID", e.Message)
		}
		if strings.Contains(string(r.body), sent) {
			t.Errorf("the answer %s quotes the header value %q", r.body, sent)
		}
		if got := r.header.Get("Mcp-Session-Id"); got != "" {
			t.Errorf("a refused request answered Mcp-Session-Id %q", got)
		}
	}
}

// TestValidSessionID: the ids the hub mints are valid; every other form of
// UUID, other versions and variants, and anything else are not.
func TestValidSessionID(t *testing.T) {
	for range 1000 {
		if id := newSessionID(); !validSessionID(id) {
			t.Fatalf("a minted id %q is not valid", id)
		}
	}
	tests := []struct {
		id   string
		want bool
	}{
		{"3f2504e0-4f89-41d3-9a0c-0305e82c3301", true},
		{"3F2504E0-4F89-41D3-9A0C-0305E82C3301", true}, // a UUID all the same; unknown, so 404
		{"3f2504e0-4f89-41d3-bfff-0305e82c3301", true}, // variant 10xx: 8, 9, a, b
		{"", false},
		{"not a uuid!", false},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", false}, // version 1
		{"3f2504e0-4f89-31d3-9a0c-0305e82c3301", false}, // version 3
		{"3f2504e0-4f89-51d3-9a0c-0305e82c3301", false}, // version 5
		{"3f2504e0-4f89-71d3-9a0c-0305e82c3301", false}, // version 7
		{"00000000-0000-0000-0000-000000000000", false}, // the nil UUID
		{"3f2504e0-4f89-41d3-0a0c-0305e82c3301", false}, // NCS variant
		{"3f2504e0-4f89-41d3-ca0c-0305e82c3301", false}, // Microsoft variant
		{"3f2504e0-4f89-41d3-ea0c-0305e82c3301", false}, // future variant
		{"{3f2504e0-4f89-41d3-9a0c-0305e82c3301}", false},
		{"urn:uuid:3f2504e0-4f89-41d3-9a0c-0305e82c3301", false},
		{"3f2504e04f8941d39a0c0305e82c3301", false},
		{"3f2504e0-4f89-41d3-9a0c-0305e82c330", false},
		{"3f2504e0-4f89-41d3-9a0c-0305e82c33011", false},
		{"3f2504e0-4f89-41d3-9a0c-0305e82c330\n", false},
		{"3f2504e0-4f89-41d3-9a0c-0305e82c330g", false},
		{"3f2504e0-4f89-41d3-9a0c-0305e82c33é", false},
		{"3f2504e0+4f89+41d3+9a0c+0305e82c3301", false},
		{"3f2504e04-f89-41d3-9a0c-0305e82c3301", false},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ", false}, // the base32 ids of the first mcphub
	}
	for _, tt := range tests {
		if got := validSessionID(tt.id); got != tt.want {
			t.Errorf("validSessionID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

// restoringStore is a Store that holds sessions of a previous run.
type restoringStore struct {
	recreatingStore
	recs []SessionRecord
}

func (s *restoringStore) Sessions() ([]SessionRecord, error) { return s.recs, nil }

// TestSeed002RestoredIDs: sessions restored from the store keep their ids
// and those ids stay valid, a UUID and a base32 id minted before mcphub's
// ids were UUIDs alike: requests and GET are served, initialize with one
// starts a new session, DELETE ends it. An unknown id of the old form is
// malformed now.
func TestSeed002RestoredIDs(t *testing.T) {
	const legacy = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	minted := newSessionID()
	now := time.Now()
	st := &restoringStore{
		recreatingStore: recreatingStore{sessions: map[string]bool{}, streams: map[string]bool{}},
		recs: []SessionRecord{
			{ID: minted, Endpoint: "", Version: "2025-11-25", ClientInfo: []byte(`{"name":"t","version":"1"}`), Capabilities: []byte(`{}`), Created: now, LastSeen: now},
			{ID: legacy, Endpoint: "alpha", Version: "2025-11-25", ClientInfo: []byte(`{"name":"t","version":"1"}`), Capabilities: []byte(`{}`), Created: now, LastSeen: now},
		},
	}
	th := startHub(t, seed002Registry, map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("echo")),
		"beta":  newFake("beta").setList("tools/list", toolItems("hello")),
	}, func(o *Options) { o.Store = st })
	// Once ended, a minted id is well-formed and unknown (404); an id of
	// the old form is then malformed like any other (400).
	for _, s := range []struct {
		id, path string
		afterEnd int
	}{{minted, "/mcp", http.StatusNotFound}, {legacy, "/alpha/mcp", http.StatusBadRequest}} {
		if r := th.send(http.MethodPost, s.path, ping, "Mcp-Session-Id", s.id, "Accept", "application/json"); r.status != http.StatusOK {
			t.Errorf("ping of restored session %s on %s: %d %s, want 200", s.id, s.path, r.status, r.body)
		}
		stream := th.open(http.MethodGet, s.path, "", "Mcp-Session-Id", s.id)
		if stream.resp.StatusCode != http.StatusOK {
			t.Errorf("GET of restored session %s on %s: %d, want 200", s.id, s.path, stream.resp.StatusCode)
		}
		stream.stop()
		r := th.send(http.MethodPost, s.path, initReq("2025-11-25", `{}`), "Mcp-Session-Id", s.id)
		if got := r.header.Get("Mcp-Session-Id"); r.status != http.StatusOK || got == "" || got == s.id {
			t.Errorf("initialize with restored id %s on %s: %d Mcp-Session-Id %q %s, want 200 and a new session", s.id, s.path, r.status, got, r.body)
		}
		if r := th.send(http.MethodDelete, s.path, "", "Mcp-Session-Id", s.id); r.status != http.StatusNoContent {
			t.Errorf("DELETE of restored session %s on %s: %d %s, want 204", s.id, s.path, r.status, r.body)
		}
		if r := th.send(http.MethodPost, s.path, ping, "Mcp-Session-Id", s.id); r.status != s.afterEnd {
			t.Errorf("ping of ended restored session %s: %d %s, want %d", s.id, r.status, r.body, s.afterEnd)
		}
	}
	if r := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), "Mcp-Session-Id", "ZYXWVUTSRQPONMLKJIHGFEDCBA"); r.status != http.StatusBadRequest {
		t.Errorf("initialize with an unknown id of the old form: %d %s, want 400", r.status, r.body)
	}
}
