package hubclient

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// argsSchema is an input schema declaring a property of every type.
const argsSchema = `{"type": "object", "properties": {
	"text": {"type": "string"}, "sha": {"type": "string"}, "zip": {"type": "string"},
	"count": {"type": "integer"}, "ratio": {"type": "number"}, "flag": {"type": "boolean"},
	"tags": {"type": "array"}, "opts": {"type": "object"},
	"maybe": {"type": ["string", "null"]}, "either": {"type": ["number", "boolean"]},
	"free": {"description": "a property without a type"}}}`

// TestArguments: key=value values are read as the tool's input schema
// types them: strings as typed, other types as JSON of that type (or a
// sentence), a JSON string literal as that string for a non-string type,
// and guessed only for undeclared properties. --args is one object, pairs
// add to it, and a key may come once. Prompt arguments are strings, always
// as typed.
func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		args   string
		pairs  []string
		schema string
		want   string // "" for no arguments; "error: ..." for a refusal with that message
	}{
		{want: ""},
		// Guessed, without a schema.
		{pairs: []string{"n=3", "ok=true", "nothing=null", "f=1.5e3"}, want: `{"f":1.5e3,"n":3,"nothing":null,"ok":true}`},
		{pairs: []string{"name=Ada", `quoted="3"`, "empty=", "path=/tmp/a=b", "word=nan"}, want: `{"empty":"","name":"Ada","path":"/tmp/a=b","quoted":"3","word":"nan"}`},
		{pairs: []string{`o={"a": [1, 2]}`, "list=[1,2]", "bad={not json"}, want: `{"bad":"{not json","list":[1,2],"o":{"a":[1,2]}}`},
		{pairs: []string{"big=12345678901234567890"}, want: `{"big":12345678901234567890}`},
		// String properties take the value as typed.
		{schema: argsSchema, pairs: []string{"text=1e3", "sha=1234567", "zip=90210"}, want: `{"sha":"1234567","text":"1e3","zip":"90210"}`},
		{schema: argsSchema, pairs: []string{"text=true"}, want: `{"text":"true"}`},
		{schema: argsSchema, pairs: []string{"text=1.10"}, want: `{"text":"1.10"}`},
		{schema: argsSchema, pairs: []string{`text="3"`}, want: `{"text":"\"3\""}`},
		{schema: argsSchema, pairs: []string{`text={"a": 1}`}, want: `{"text":"{\"a\": 1}"}`},
		// Other types take JSON of that type.
		{schema: argsSchema, pairs: []string{"count=3", "ratio=1.10", "flag=false", `tags=["a"]`, `opts={"k": 1}`},
			want: `{"count":3,"flag":false,"opts":{"k":1},"ratio":1.10,"tags":["a"]}`},
		{schema: argsSchema, pairs: []string{"count=3.0", "ratio=7"}, want: `{"count":3.0,"ratio":7}`},
		{schema: argsSchema, pairs: []string{"count=1e2"}, want: `{"count":1e2}`},
		{schema: argsSchema, pairs: []string{`count="3"`}, want: `{"count":"3"}`},
		{schema: argsSchema, pairs: []string{"count=abc"}, want: "error: count must be an integer, got abc"},
		{schema: argsSchema, pairs: []string{"count=1.5"}, want: "error: count must be an integer, got 1.5"},
		{schema: argsSchema, pairs: []string{"count="}, want: "error: count must be an integer, got nothing"},
		{schema: argsSchema, pairs: []string{"ratio=abc"}, want: "error: ratio must be a number, got abc"},
		{schema: argsSchema, pairs: []string{"ratio=true"}, want: "error: ratio must be a number, got true"},
		{schema: argsSchema, pairs: []string{"flag=yes"}, want: "error: flag must be true or false, got yes"},
		{schema: argsSchema, pairs: []string{"tags=a,b"}, want: `error: tags must be a JSON array, such as ["a", "b"], got a,b`},
		{schema: argsSchema, pairs: []string{"opts=[1]"}, want: `error: opts must be a JSON object, such as {"a": 1}, got [1]`},
		{schema: argsSchema, pairs: []string{"maybe=null"}, want: `{"maybe":null}`},
		{schema: argsSchema, pairs: []string{"maybe=3"}, want: `{"maybe":"3"}`},
		{schema: argsSchema, pairs: []string{"maybe=abc"}, want: `{"maybe":"abc"}`},
		{schema: argsSchema, pairs: []string{"either=true", "ratio=2"}, want: `{"either":true,"ratio":2}`},
		{schema: argsSchema, pairs: []string{"either=x"}, want: "error: either must be a number or true or false, got x"},
		// Undeclared properties, and properties without a type, are guessed.
		{schema: argsSchema, pairs: []string{"free=3", "other=true", "word=x"}, want: `{"free":3,"other":true,"word":"x"}`},
		// --args, and pairs added to it.
		{args: `{"z": 1, "a": {"keep": "as sent"}}`, want: `{"z": 1, "a": {"keep": "as sent"}}`},
		{args: `{"z": 1, "a": 2}`, pairs: []string{"a=3", "b=x"}, want: `{"a":3,"b":"x","z":1}`},
		{args: `{"count": 1}`, schema: argsSchema, pairs: []string{"count=2", "text=2"}, want: `{"count":2,"text":"2"}`},
		{args: `[1, 2]`, want: "error: --args must be one JSON object"},
		{args: `{"a": `, want: "error: --args must be one JSON object"},
		{args: `"text"`, want: "error: --args must be one JSON object"},
		{pairs: []string{"novalue"}, want: `error: argument "novalue" is not key=value`},
		{pairs: []string{"=x"}, want: `error: argument "=x" is not key=value`},
		{pairs: []string{"a=1", "b=2", "a=3"}, want: "error: argument a is given twice; give each argument once"},
	} {
		got, err := ToolArguments(tc.args, tc.pairs, json.RawMessage(tc.schema))
		switch {
		case strings.HasPrefix(tc.want, "error: "):
			if err == nil || !strings.HasPrefix(err.Error(), strings.TrimPrefix(tc.want, "error: ")) {
				t.Errorf("--args %q %q: %s, %v; want the error %q", tc.args, tc.pairs, got, err, strings.TrimPrefix(tc.want, "error: "))
			}
		case err != nil:
			t.Errorf("--args %q %q: %v", tc.args, tc.pairs, err)
		case string(got) != tc.want:
			t.Errorf("--args %q %q = %s, want %s", tc.args, tc.pairs, got, tc.want)
		}
	}

	got, err := PromptArguments([]string{"n=3", `q="x"`, "b=true", "e="})
	if want := map[string]string{"n": "3", "q": `"x"`, "b": "true", "e": ""}; err != nil || !maps.Equal(got, want) {
		t.Errorf("prompt arguments %v, %v; want %v, every value as typed", got, err, want)
	}
	if _, err := PromptArguments([]string{"a=1", "a=2"}); err == nil {
		t.Error("prompt arguments accepted a key given twice")
	}
}
