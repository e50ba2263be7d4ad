package mcpterm

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
)

// TestPrintContent: each kind of content block prints as a user reads it,
// binary data as a note with its type and size.
func TestPrintContent(t *testing.T) {
	var out bytes.Buffer
	printContent(&out, []mcp.Content{
		&mcp.TextContent{Text: "line one"},
		&mcp.TextContent{Text: "ends with a newline\n"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("abc")},
		&mcp.AudioContent{MIMEType: "not a type;;", Data: []byte("a")},
		&mcp.ResourceLink{URI: "file:///a.txt"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///empty"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t", Text: "embedded"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", MIMEType: "application/pdf", Blob: []byte("12")}},
		&mcp.EmbeddedResource{},
	})
	want := "line one\nends with a newline\n[image image/png, 3 bytes]\n[audio of unknown type, 1 byte]\n" +
		"[resource link file:///a.txt]\n[resource file:///empty]\nembedded\n[file:///b application/pdf, 2 bytes]\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestPrintCallResult: a result prints its content, or its structured
// content as JSON; --json prints it as sent; an error result goes to
// stderr and exits 1, and one without a message says so.
func TestPrintCallResult(t *testing.T) {
	for _, tc := range []struct {
		name, raw      string
		asJSON         bool
		stdout, stderr string
		code           int
		err            string
	}{
		{name: "text", raw: `{"content":[{"type":"text","text":"hi"}]}`, stdout: "hi\n"},
		{name: "structured", raw: `{"content":[],"structuredContent":{"b":1,"a":2}}`, stdout: "{\n  \"b\": 1,\n  \"a\": 2\n}\n"},
		{name: "null structured", raw: `{"content":[],"structuredContent":null}`},
		{name: "as sent", raw: `{"content":[],"zeta":1}`, asJSON: true, stdout: "{\n  \"content\": [],\n  \"zeta\": 1\n}\n"},
		{name: "error as sent", raw: `{"content":[],"isError":true}`, asJSON: true, stdout: "{\n  \"content\": [],\n  \"isError\": true\n}\n", code: 1},
		{name: "error", raw: `{"content":[{"type":"text","text":"bad"}],"isError":true}`, stderr: "bad\n", code: 1},
		{name: "error without a message", raw: `{"content":[],"isError":true}`, err: "t reported an error without a message"},
		{name: "malformed", raw: `{"content":7}`, err: "call t: the hub's result is malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			c := &Client{Stdout: &stdout, Stderr: &stderr}
			err := c.printCallResult("t", []byte(tc.raw), tc.asJSON)
			var exit ExitError
			switch {
			case tc.err != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
			case tc.code != 0:
				if !errors.As(err, &exit) || exit.Code != tc.code {
					t.Errorf("error %v, want exit %d", err, tc.code)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

// TestPromptArgs: the optional arguments are in brackets, none is "-".
func TestPromptArgs(t *testing.T) {
	var p hubclient.Prompt
	if got := promptArgs(p); got != "-" {
		t.Errorf("no arguments: %q, want -", got)
	}
	if err := jsonUnmarshal(`{"arguments":[{"name":"owner","required":true},null,{"name":"branch"}]}`, &p); err != nil {
		t.Fatal(err)
	}
	if got := promptArgs(p); got != "owner [branch]" {
		t.Errorf("arguments %q, want %q", got, "owner [branch]")
	}
}

// TestInterruptedWithoutSession: an interrupt before the session opened
// says so and exits 130, the note as its reason.
func TestInterruptedWithoutSession(t *testing.T) {
	var stderr bytes.Buffer
	err := (&Client{Stderr: &stderr}).Interrupted(nil)
	var exit ExitError
	if !errors.As(err, &exit) || exit.Code != 130 || exit.Why != "interrupted" || stderr.String() != "mcphub: interrupted\n" {
		t.Errorf("error %#v, stderr %q; want exit 130 and a note", err, stderr.String())
	}
}
