package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// serveLines runs the demo server on lines, one message each, and returns
// what it sent, by id ("" for messages without one, in the order sent).
func serveLines(t *testing.T, lines ...string) (byID map[string]*jsonrpc.Message, others []*jsonrpc.Message) {
	t.Helper()
	var out bytes.Buffer
	Serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, "9.9.9")
	byID = map[string]*jsonrpc.Message{}
	for line := range strings.Lines(out.String()) {
		m, err := jsonrpc.Decode([]byte(line))
		if err != nil {
			t.Fatalf("the server sent %q: %v", line, err)
		}
		if m.IsNotification() {
			others = append(others, m)
			continue
		}
		if byID[string(m.ID)] != nil {
			t.Errorf("two answers to id %s", m.ID)
		}
		byID[string(m.ID)] = m
	}
	return byID, others
}

// TestServeAnswers: every method the demo offers answers as a client
// expects, and what it does not offer is refused with the spec's codes.
func TestServeAnswers(t *testing.T) {
	got, _ := serveLines(t,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi \"there\""}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":0.5}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","arguments":{"a":"two"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"demo://readme"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"demo://other"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"sampling/createMessage"}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"countdown","arguments":{"n":101}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`{"jsonrpc":"2.0","id":13,"method":"resources/templates/list"}`,
	)
	result := func(id string) string {
		t.Helper()
		m := got[id]
		if m == nil || m.Error != nil {
			t.Fatalf("id %s: %+v, want a result", id, m)
		}
		return string(m.Result)
	}
	refusal := func(id string, code int) {
		t.Helper()
		if m := got[id]; m == nil || m.Error == nil || m.Error.Code != code {
			t.Errorf("id %s: %+v, want error %d", id, m, code)
		}
	}
	if v, _ := jsonrpc.StringMember(json.RawMessage(result("1")), "protocolVersion"); v != jsonrpc.LatestSessionVersion {
		t.Errorf("initialize of an unknown revision answered %s, want the latest", v)
	}
	if !strings.Contains(result("1"), `"serverInfo":{"name":"mcphub-demo","version":"9.9.9"}`) {
		t.Errorf("initialize: %s", result("1"))
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(json.RawMessage(result("3")), &list); err != nil || len(list.Tools) != 3 || list.Tools[2].Name != "countdown" {
		t.Errorf("tools/list: %+v (%v)", list, err)
	}
	for id, want := range map[string]string{
		"2":  `{}`,
		"4":  `{"content":[{"type":"text","text":"hi \"there\""}]}`,
		"5":  `{"content":[{"type":"text","text":"2.5"}]}`,
		"8":  `{"messages":[{"role":"user","content":{"type":"text","text":"Say hello to Ada."}}]}`,
		"13": `{"resourceTemplates":[]}`,
	} {
		if r := result(id); r != want {
			t.Errorf("id %s: %s, want %s", id, r, want)
		}
	}
	if !strings.Contains(result("9"), "mcphub remove demo") {
		t.Errorf("readme: %s", result("9"))
	}
	refusal("6", jsonrpc.CodeInvalidParams)
	refusal("7", jsonrpc.CodeInvalidParams)
	refusal("10", -32002)
	refusal("11", jsonrpc.CodeMethodNotFound)
	refusal("12", jsonrpc.CodeInvalidParams)
	if len(got) != 13 {
		t.Errorf("%d answers, want 13 (none to the notification)", len(got))
	}
}

// TestServeRefusesWhatIsNotJSONRPC answers a line that is not JSON-RPC
// with an error of no id.
func TestServeRefusesWhatIsNotJSONRPC(t *testing.T) {
	got, _ := serveLines(t, `{"jsonrpc":`)
	if m := got["null"]; m == nil || m.Error == nil || m.Error.Code != jsonrpc.CodeParseError {
		t.Errorf("answers %v, want a parse error of id null", got)
	}
}

// TestServeCountdownReportsProgress: countdown reports each step to a
// request that asked for progress, then lifts off.
func TestServeCountdownReportsProgress(t *testing.T) {
	got, progress := serveLines(t, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"countdown","arguments":{"n":2},"_meta":{"progressToken":"tok"}}}`)
	if len(progress) != 2 {
		t.Fatalf("%d notifications, want 2", len(progress))
	}
	for i, want := range []string{
		`{"progressToken":"tok","progress":1,"total":2,"message":"1"}`,
		`{"progressToken":"tok","progress":2,"total":2,"message":"0"}`,
	} {
		if p := progress[i]; p.Method != "notifications/progress" || string(p.Params) != want {
			t.Errorf("notification %d: %s %s, want %s", i, p.Method, p.Params, want)
		}
	}
	if m := got[`"c"`]; m == nil || string(m.Result) != `{"content":[{"type":"text","text":"liftoff"}]}` {
		t.Errorf("countdown answered %+v", m)
	}
}

// TestServeCancel: a countdown cancelled by notifications/cancelled stops
// and sends no answer, as the spec asks, while other requests are still
// answered.
func TestServeCancel(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(inR, outW, "dev")
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"countdown","arguments":{"n":100}}}`)
	write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	write(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if !lines.Scan() || lines.Text() != `{"jsonrpc":"2.0","id":8,"result":{}}` {
		t.Fatalf("first line %q (%v), want the ping's answer", lines.Text(), lines.Err())
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its input ended: the cancelled countdown still runs")
	}
	if lines.Scan() {
		t.Errorf("the cancelled countdown answered %s", lines.Text())
	}
}
