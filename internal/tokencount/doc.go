// Package tokencount counts what a hub's tools cost a model: every tool a
// client is given comes with its tools/list entry (name, description,
// input schema ...), which the client puts in the model's context on every
// request. The package owns the tokenizer encodings mcphub offers, the
// counting of tool entries (compacted JSON, each distinct entry tokenized
// once), the report of one endpoint's costs by server and tool with its
// text for a terminal (Report.WriteText), and the table of AI clients' caps
// on the number of tools they take.
//
// It counts what it is given: the caller fetches the endpoint's catalog
// from a running hub and hands it over as an api.Catalog. The package imports
// only the standard library, api/, internal/jsonrpc, internal/termtext and
// github.com/tiktoken-go/tokenizer; it never
// imports hub/, client/, registry/ or cmd/, and never talks to a hub.
package tokencount
