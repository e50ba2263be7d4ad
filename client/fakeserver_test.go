package client

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The test binary doubles as a scripted stdio MCP server: when
// MCPHUB_FAKE_SERVER is set, TestMain runs fakeServer instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPHUB_FAKE_SERVER"); mode != "" {
		fakeServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeStdioConfig is a Config that runs this test binary as a fake server.
func fakeStdioConfig(t *testing.T, mode string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Name:    "fake",
		Command: exe,
		Args:    []string{"-test.run=^$"},
		Env:     map[string]string{"MCPHUB_FAKE_SERVER": mode, "FAKE_SECRET": "registry-given"},
	}
}

// fakeModes are further modes of the re-executed test binary, set by the
// per-OS test files.
var fakeModes = map[string]func(){}

// fakeServer speaks just enough MCP over stdio to script the client's tests.
// Besides answering, it misbehaves on purpose: a line that is not JSON
// precedes the initialize result, and stderr gets chatter.
//
// Modes: "normal"; "stubborn" ignores SIGTERM and stdin EOF; "mute" is
// stubborn and never answers; "spawn" first starts a grandchild (a copy of
// itself in mode "sleeper", which never reads stdin and ignores SIGTERM)
// and tells its PID through the tool "grandchild"; "sleeper" only sleeps;
// the modes of fakeModes are OS-specific helpers.
func fakeServer(mode string) {
	if f := fakeModes[mode]; f != nil {
		f()
		return
	}
	switch mode {
	case "stubborn", "mute":
		signal.Ignore(syscall.SIGTERM)
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		for {
			time.Sleep(time.Hour)
		}
	}
	grandchild := 0
	if mode == "spawn" {
		exe, _ := os.Executable()
		gc := exec.Command(exe, "-test.run=^$")
		gc.Env = append(os.Environ(), "MCPHUB_FAKE_SERVER=sleeper")
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake: start grandchild:", err)
			os.Exit(1)
		}
		grandchild = gc.Process.Pid
	}
	var mu sync.Mutex
	writeLine := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.Write(append(b, '\n'))
	}
	send := func(m *jsonrpc.Message) { writeLine(m.Encode()) }
	in := bufio.NewReader(os.Stdin)
	answers := map[string]chan *jsonrpc.Message{}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if mode == "stubborn" || mode == "mute" {
				select {} // ignore stdin EOF as well
			}
			return
		}
		if mode == "mute" {
			continue
		}
		m, derr := jsonrpc.Decode(line)
		if derr != nil {
			fmt.Fprintf(os.Stderr, "fake: bad line %q\n", line)
			continue
		}
		if m.IsResponse() {
			if ch := answers[string(m.ID)]; ch != nil {
				ch <- m
			}
			continue
		}
		if !m.IsRequest() {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintln(os.Stderr, "fake: starting up")
			writeLine([]byte("this line is not JSON"))
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(m.Params, &p)
			send(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil,
				`{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1.0"},"instructions":"be kind"}`,
				p.ProtocolVersion)))
		case "tools/call":
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Meta      struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			}
			json.Unmarshal(m.Params, &p)
			switch p.Name {
			case "echo":
				send(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(string(p.Arguments)))))
			case "progress":
				for i := 1; i <= 3; i++ {
					send(jsonrpc.NewNotification("notifications/progress", fmt.Appendf(nil, `{"progressToken":%s,"progress":%d,"total":3}`, p.Meta.ProgressToken, i)))
				}
				send(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`)))
			case "env":
				send(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(strings.Join(os.Environ(), "\n")))))
			case "huge":
				writeLine([]byte(`{"jsonrpc":"2.0","method":"x","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`))
				send(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`)))
			case "sample":
				ch := make(chan *jsonrpc.Message, 1)
				answers[`"s1"`] = ch
				send(jsonrpc.NewRequest(json.RawMessage(`"s1"`), "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":5}`)))
				go func(id json.RawMessage) {
					reply := <-ch
					send(jsonrpc.NewResponse(id, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(string(reply.Result)))))
				}(m.ID)
			case "grandchild":
				send(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%q}]}`, strconv.Itoa(grandchild))))
			case "crash":
				fmt.Fprintln(os.Stderr, "fatal: the fake server crashed on purpose")
				os.Exit(3)
			case "hang":
				// never answers
			default:
				if !misbehave(p.Name, m, p.Arguments, writeLine, answers) {
					send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %s", p.Name)))
				}
			}
		default:
			send(jsonrpc.NewResponse(m.ID, nil))
		}
	}
}

// misbehave runs the tools that break the rules, and reports whether name
// is one: "big" (see bigMessage); "leak" prints its env secret and a
// credential on stderr and exits; "deafen" answers, then stops reading
// stdin for good.
func misbehave(name string, m *jsonrpc.Message, args json.RawMessage, writeLine func([]byte), answers map[string]chan *jsonrpc.Message) bool {
	switch name {
	case "big":
		bigMessage(m, args, writeLine, answers)
	case "leak":
		fmt.Fprintln(os.Stderr, "config: token="+os.Getenv("FAKE_SECRET")+" in use")
		fmt.Fprintln(os.Stderr, "upstream said: Authorization: Bearer abcdefgh12345678")
		fmt.Fprintln(os.Stderr, "fatal: giving up")
		os.Exit(3)
	case "deafen":
		writeLine(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`)).Encode())
		select {}
	default:
		return false
	}
	return true
}

// bigMessage writes a line of args.size bytes or more: a response to m with
// its id first ("response") or last ("response-id-last"), or a request the
// client must answer ("request"), whose answer then answers m.
func bigMessage(m *jsonrpc.Message, args json.RawMessage, writeLine func([]byte), answers map[string]chan *jsonrpc.Message) {
	var a struct {
		Size int    `json:"size"`
		Kind string `json:"kind"`
	}
	json.Unmarshal(args, &a)
	pad := strings.Repeat("x", a.Size)
	switch a.Kind {
	case "response":
		writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, m.ID, pad))
	case "response-id-last":
		writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"%s"}]},"id":%s}`, pad, m.ID))
	case "request":
		ch := make(chan *jsonrpc.Message, 1)
		answers[`"big1"`] = ch
		writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"big1","method":"sampling/createMessage","params":{"pad":"%s"}}`, pad))
		go func(id json.RawMessage) {
			reply := <-ch
			text := "no error"
			if reply.Error != nil {
				text = reply.Error.Message
			}
			writeLine(jsonrpc.NewResponse(id, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(text))).Encode())
		}(m.ID)
	}
}
