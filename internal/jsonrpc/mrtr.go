package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Multi-round-trip requests (SEP-2322): a 2026-07-28 server that needs input
// answers a request with an input_required result naming what it asks for;
// the client asks for each, and makes the request again with the answers
// in inputResponses and the server's requestState.

// InputRequired reports whether a result asks for input.
func InputRequired(result json.RawMessage) bool {
	rt, _ := StringMember(result, "resultType")
	return rt == "input_required"
}

// AnswerInputs asks for every input an input_required result names, all at
// once, and returns the inputResponses object of the answers. The first
// failure fails them all.
func AnswerInputs(ctx context.Context, result json.RawMessage, ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	type input struct {
		key, method string
		params, res json.RawMessage
		err         error
	}
	var all []*input
	requests, _ := Member(result, "inputRequests")
	Members(requests, func(k []byte, v json.RawMessage) {
		method, _ := StringMember(v, "method")
		params, _ := Member(v, "params")
		all = append(all, &input{key: string(k), method: method, params: params})
	})
	var wg sync.WaitGroup
	for _, in := range all {
		wg.Go(func() { in.res, in.err = ask(ctx, in.method, in.params) })
	}
	wg.Wait()
	out := []byte{'{'}
	for i, in := range all {
		if in.err != nil {
			return nil, fmt.Errorf("the server asked for %s (%s): %w", in.method, in.key, in.err)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendString(out, in.key)
		out = append(out, ':')
		out = append(out, in.res...)
	}
	return append(out, '}'), nil
}

// RetryParams returns the params of a request made again after an
// input_required result: with the answers as inputResponses and the
// result's requestState (none when it had none); every other member keeps
// its bytes.
func RetryParams(params, result, responses json.RawMessage) (json.RawMessage, error) {
	out, err := SetMember(params, "inputResponses", responses)
	if err != nil {
		return nil, err
	}
	if state, ok := Member(result, "requestState"); ok {
		return SetMember(out, "requestState", state)
	}
	return DeleteMember(out, "requestState")
}
