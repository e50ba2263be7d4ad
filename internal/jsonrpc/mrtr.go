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

// MaxInputRounds bounds the rounds of input Rounds gives one request.
const MaxInputRounds = 16

// Rounds drives a request whose result may ask for input: while res is
// input_required, it asks for the inputs (AnswerInputs with ask) and makes
// the request again (call) with the answers, at most MaxInputRounds times,
// and returns the first result that does not ask.
func Rounds(ctx context.Context, params, res json.RawMessage,
	call func(ctx context.Context, params json.RawMessage) (json.RawMessage, error),
	ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	for round := 0; InputRequired(res); round++ {
		if round == MaxInputRounds {
			return nil, fmt.Errorf("the server asked for input %d times in one request; gave up", MaxInputRounds)
		}
		responses, err := AnswerInputs(ctx, res, ask)
		if err != nil {
			return nil, err
		}
		if params, err = RetryParams(params, res, responses); err != nil {
			return nil, NewError(CodeInvalidParams, "params must be an object")
		}
		if res, err = call(ctx, params); err != nil {
			return nil, err
		}
	}
	return res, nil
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
