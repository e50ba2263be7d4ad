package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// allMembers asks decodeParams for every member it knows.
const allMembers = mName | mURI | mCursor | mLevel | mRef

// flatParams is params in a comparable form; rawNil tells a ref that is
// absent (or not an object) from one whose bytes were kept.
type flatParams struct {
	name, uri, cursor, level string
	refType, refName, refURI string
	refRaw                   string
	rawNil                   bool
}

func flatten(p params) flatParams {
	return flatParams{
		name: p.name, uri: p.uri, cursor: p.cursor, level: p.level,
		refType: p.ref.typ, refName: p.ref.name, refURI: p.ref.uri,
		refRaw: string(p.ref.raw), rawNil: p.ref.raw == nil,
	}
}

// paramsSeeds are the inputs of TestDecodeParams, and the seed corpus of
// FuzzDecodeParams.
var paramsSeeds = []string{
	`{"name":"n","uri":"u","cursor":"c","level":"debug","ref":{"type":"ref/prompt","name":"p"}}`,
	`{"name":5,"uri":true,"cursor":null,"level":["debug"],"ref":"ref/prompt"}`,
	`{"name":"first","name":"second"}`,
	`{"name":"first","name":7}`,
	`{"n\u0061me":"escaped key","\u0075ri":"x"}`,
	`{"name":"a\"b\u00e9\n"}`,
	`{ "ref" : { "type" : "ref/resource", "uri" : "test://t/{id}" } }`,
	`{"ref":{"type":"ref/prompt","name":"p"},"ref":{"type":"ref/resource","uri":"x://y"}}`,
	`{"ref":{"type":1,"name":{},"uri":[]}}`,
	`{"arguments":{"name":"nested","uri":"nested"}}`,
	`{}`,
	`[{"name":"n"}]`,
	`"name"`,
	`null`,
	`42`,
	` {"cursor":"spaced"} `,
}

// TestDecodeParams checks that each members flag picks only its member,
// that a wrong-typed member stays empty, that the last duplicate wins as
// jsonrpc.Member has it, that escaped keys and values are decoded, that a
// ref keeps its raw bytes, and that params that are not an object decode to
// nothing.
func TestDecodeParams(t *testing.T) {
	full := paramsSeeds[0]
	for _, tc := range []struct {
		name string
		raw  string
		want members
		out  flatParams
	}{
		{"nothing wanted", full, 0, flatParams{rawNil: true}},
		{"name only", full, mName, flatParams{name: "n", rawNil: true}},
		{"uri only", full, mURI, flatParams{uri: "u", rawNil: true}},
		{"cursor only", full, mCursor, flatParams{cursor: "c", rawNil: true}},
		{"level only", full, mLevel, flatParams{level: "debug", rawNil: true}},
		{"ref only", full, mRef, flatParams{refType: "ref/prompt", refName: "p", refRaw: `{"type":"ref/prompt","name":"p"}`}},
		{"everything", full, allMembers, flatParams{name: "n", uri: "u", cursor: "c", level: "debug",
			refType: "ref/prompt", refName: "p", refRaw: `{"type":"ref/prompt","name":"p"}`}},
		{"wrong types", paramsSeeds[1], allMembers, flatParams{refRaw: `"ref/prompt"`}},
		{"last duplicate wins", paramsSeeds[2], mName, flatParams{name: "second", rawNil: true}},
		{"last duplicate wins even when wrong-typed", paramsSeeds[3], mName, flatParams{rawNil: true}},
		{"escaped keys", paramsSeeds[4], mName | mURI, flatParams{name: "escaped key", uri: "x", rawNil: true}},
		{"escaped value", paramsSeeds[5], mName, flatParams{name: "a\"b\u00e9\n", rawNil: true}},
		{"ref bytes kept as sent", paramsSeeds[6], mRef, flatParams{refType: "ref/resource", refURI: "test://t/{id}",
			refRaw: `{ "type" : "ref/resource", "uri" : "test://t/{id}" }`}},
		{"last ref wins whole", paramsSeeds[7], mRef, flatParams{refType: "ref/resource", refURI: "x://y",
			refRaw: `{"type":"ref/resource","uri":"x://y"}`}},
		{"ref with wrong-typed members", paramsSeeds[8], mRef, flatParams{refRaw: `{"type":1,"name":{},"uri":[]}`}},
		{"nested members are not params members", paramsSeeds[9], allMembers, flatParams{rawNil: true}},
		{"empty object", paramsSeeds[10], allMembers, flatParams{rawNil: true}},
		{"array", paramsSeeds[11], allMembers, flatParams{rawNil: true}},
		{"string", paramsSeeds[12], allMembers, flatParams{rawNil: true}},
		{"null", paramsSeeds[13], allMembers, flatParams{rawNil: true}},
		{"number", paramsSeeds[14], allMembers, flatParams{rawNil: true}},
		{"absent", "", allMembers, flatParams{rawNil: true}},
		{"surrounding space", paramsSeeds[15], mCursor, flatParams{cursor: "spaced", rawNil: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw json.RawMessage
			if tc.raw != "" {
				raw = json.RawMessage(tc.raw)
			}
			if got := flatten(decodeParams(raw, tc.want)); got != tc.out {
				t.Errorf("decodeParams(%s, %05b)\n got %+v\nwant %+v", tc.raw, tc.want, got, tc.out)
			}
		})
	}
}

// FuzzDecodeParams feeds decodeParams valid JSON: it must never panic and
// must agree with jsonrpc.StringMember and jsonrpc.Member on every member,
// whichever members are asked for.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range paramsSeeds {
		f.Add([]byte(s))
	}
	strMembers := []struct {
		flag members
		key  string
		set  func(*flatParams, string)
	}{
		{mName, "name", func(p *flatParams, v string) { p.name = v }},
		{mURI, "uri", func(p *flatParams, v string) { p.uri = v }},
		{mCursor, "cursor", func(p *flatParams, v string) { p.cursor = v }},
		{mLevel, "level", func(p *flatParams, v string) { p.level = v }},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // params reach the router only as valid JSON
		}
		raw := json.RawMessage(data)
		wantRef := flatParams{rawNil: true}
		if v, ok := jsonrpc.Member(raw, "ref"); ok {
			typ, _ := jsonrpc.StringMember(v, "type")
			name, _ := jsonrpc.StringMember(v, "name")
			uri, _ := jsonrpc.StringMember(v, "uri")
			wantRef = flatParams{refType: typ, refName: name, refURI: uri, refRaw: string(v)}
		}
		if got := flatten(decodeParams(raw, mRef)); got != wantRef {
			t.Errorf("ref alone = %+v, want %+v", got, wantRef)
		}
		wantAll := wantRef
		for _, m := range strMembers {
			v, _ := jsonrpc.StringMember(raw, m.key)
			m.set(&wantAll, v)
			wantOnly := flatParams{rawNil: true}
			m.set(&wantOnly, v)
			if got := flatten(decodeParams(raw, m.flag)); got != wantOnly {
				t.Errorf("%s alone = %+v, want %+v", m.key, got, wantOnly)
			}
		}
		if got := flatten(decodeParams(raw, allMembers)); got != wantAll {
			t.Errorf("every member = %+v, want %+v", got, wantAll)
		}
	})
}

// TestRouterMethodTable calls every method of the table on a live session:
// each has a handler, and none answers "method not found".
func TestRouterMethodTable(t *testing.T) {
	th := routedHub(t)
	s := sessionOn(t, th.h, "", `{}`)
	for method, rt := range routes {
		t.Run(method, func(t *testing.T) {
			if rt.serve == nil {
				t.Fatal("the route has no handler")
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			m := &jsonrpc.Message{ID: jsonrpc.IntID(1), Method: method, Params: json.RawMessage(`{}`)}
			_, err := th.h.router.route(ctx, s, m, nil)
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
				t.Errorf("%s answered %d %q", method, rpcErr.Code, rpcErr.Message)
			}
			if ctx.Err() != nil {
				t.Errorf("%s did not answer within %s", method, waitFor)
			}
		})
	}
}

// TestRouterUnknownMethod: a method the table lacks is answered -32601
// "method not found", naming it, without reaching an upstream.
func TestRouterUnknownMethod(t *testing.T) {
	th := routedHub(t)
	s := sessionOn(t, th.h, "", `{}`)
	for _, method := range []string{"tools/nope", "Ping", "notifications/initialized", "server/discover", "tools/list/", ""} {
		if _, ok := routes[method]; ok {
			t.Fatalf("%q is in the table; pick another unknown method", method)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := th.h.router.route(ctx, s, &jsonrpc.Message{ID: jsonrpc.IntID(1), Method: method, Params: json.RawMessage(`{"name":"alpha__echo"}`)}, nil)
		cancel()
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound ||
			!strings.Contains(rpcErr.Message, "method not found") || !strings.Contains(rpcErr.Message, method) {
			t.Errorf("%q: result %s, err %v; want -32601 method not found naming it", method, res, err)
		}
	}
	for name, f := range th.fakes {
		f.mu.Lock()
		n := len(f.calls)
		f.mu.Unlock()
		if n != 0 {
			t.Errorf("%s got %d calls for unknown methods", name, n)
		}
	}
}

// TestDecodeParamsAllocations keeps decoding a tools/call's params cheap:
// one allocation, for the name, however many members the params have.
func TestDecodeParamsAllocations(t *testing.T) {
	raw := json.RawMessage(`{"name":"github__create_issue","arguments":{"title":"t","body":"b"},"_meta":{"progressToken":7}}`)
	if n := testing.AllocsPerRun(200, func() { decodeParams(raw, mName) }); n > 1 {
		t.Errorf("decodeParams allocated %.0f times, want at most 1 (the name)", n)
	}
}
