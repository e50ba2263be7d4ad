package tokencount

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Encoding is a tokenizer encoding mcphub counts with. Its vocabulary is
// decoded only by NewCounter, as decoding takes a moment and a caller
// first checks the name a user gave.
type Encoding struct {
	// Name is the encoding's name, as --encoding takes it: "o200k_base".
	Name  string
	codec func() *codec.Codec
}

// Encodings are the encodings mcphub offers, the default first:
// o200k_base (GPT-4o and later) and cl100k_base (GPT-4).
var Encodings = []Encoding{
	{Name: "o200k_base", codec: codec.NewO200kBase},
	{Name: "cl100k_base", codec: codec.NewCl100kBase},
}

// EncodingNames are the names of Encodings, the default first, for a
// flag's completion and its error message.
func EncodingNames() []string {
	names := make([]string, len(Encodings))
	for i, e := range Encodings {
		names[i] = e.Name
	}
	return names
}

// LookupEncoding is the entry of Encodings named name; ok is false when
// mcphub offers no such encoding.
func LookupEncoding(name string) (e Encoding, ok bool) {
	for _, e := range Encodings {
		if e.Name == name {
			return e, true
		}
	}
	return Encoding{}, false
}

// NewCounter decodes the encoding's vocabulary and returns a counter with
// it. One counter serves a whole run, so that an entry several endpoints
// list is tokenized once.
func (e Encoding) NewCounter() *Counter {
	return &Counter{codec: e.codec()}
}

// Counter counts the tokens of tool entries with one encoding.
type Counter struct {
	codec *codec.Codec
	// counted are the tokens of the entries counted so far, by their JSON
	// as the hub sent it: a tool of several views (/mcp, a profile in
	// search mode) is tokenized once.
	counted map[string]int
}

// Encoding is the name of the counter's encoding, which a report names so
// that its counts can be compared with others'.
func (c *Counter) Encoding() string { return c.codec.GetName() }

// Count is the number of tokens of raw, a JSON value, compacted first so
// that whitespace between its tokens does not count: a client sends the
// model the entry, not the hub's indentation.
func (c *Counter) Count(raw json.RawMessage) (int, error) {
	if n, ok := c.counted[string(raw)]; ok {
		return n, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return 0, fmt.Errorf("the hub's tool entry is not JSON: %w", err)
	}
	n, err := c.codec.Count(buf.String())
	if err != nil {
		return 0, fmt.Errorf("count the tokens of a tool entry: %w", err)
	}
	if c.counted == nil {
		c.counted = map[string]int{}
	}
	c.counted[string(raw)] = n
	return n, nil
}
