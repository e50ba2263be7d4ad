package stdioface

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The client's side of the face: the one goroutine reading stdin and the
// one writing stdout, and the hold on what the hub says before the client
// has its initialize response.

// send queues one message for the client. Each is written as one line.
func (f *face) send(m *jsonrpc.Message) {
	f.queue(frameLine(m))
}

func (f *face) queue(line []byte) {
	select {
	case f.out <- line:
	case <-f.writerDone:
	}
}

// sendHub queues a message the hub sent on its own (a notification, a
// request of its, the cancellation of one). Until the client has the
// initialize response it is held, in order, and queued right after it.
func (f *face) sendHub(m *jsonrpc.Message) {
	line := frameLine(m)
	f.greetMu.Lock()
	if !f.greeted {
		f.held = append(f.held, line)
		f.greetMu.Unlock()
		return
	}
	f.greetMu.Unlock()
	f.queue(line)
}

// greet lets the hub's own messages through once the initialize response
// is queued, those held first. Queueing them under greetMu keeps a message
// that comes meanwhile behind them.
func (f *face) greet() {
	f.greetMu.Lock()
	defer f.greetMu.Unlock()
	for _, line := range f.held {
		f.queue(line)
	}
	f.held, f.greeted = nil, true
}

// writer is the one goroutine that writes to stdout. When told to stop it
// writes what is queued, then returns.
func (f *face) writer() {
	defer close(f.writerDone)
	w := bufio.NewWriterSize(f.cfg.Out, 64<<10)
	write := func(line []byte) bool {
		if _, err := w.Write(line); err != nil {
			f.log.Debug("stdout is closed", "err", err)
			return false
		}
		// Flush once nothing more is queued, so a burst is one write.
		if len(f.out) == 0 {
			if err := w.Flush(); err != nil {
				f.log.Debug("stdout is closed", "err", err)
				return false
			}
		}
		return true
	}
	for {
		select {
		case line := <-f.out:
			if !write(line) {
				return
			}
		case <-f.writerStop:
			for {
				select {
				case line := <-f.out:
					if !write(line) {
						return
					}
				default:
					w.Flush()
					return
				}
			}
		}
	}
}

// reader decodes the client's lines and hands them over in order; it closes
// msgs when stdin ends. A line that is not a JSON-RPC message is answered
// with the JSON-RPC error for it.
func (f *face) reader(msgs chan<- *jsonrpc.Message) {
	defer close(msgs)
	err := readLines(f.cfg.In, faceMaxLine, func(line []byte, tooLong bool) bool {
		m, rpcErr := decodeLine(line, tooLong)
		if rpcErr != nil {
			f.log.Warn("refused a line from the client", "err", rpcErr.Message)
			var id json.RawMessage
			if m != nil {
				id = m.ID
			}
			f.send(jsonrpc.NewErrorResponse(id, rpcErr))
			return true
		}
		if m == nil {
			return true
		}
		select {
		case msgs <- m:
			return true
		case <-f.ctx.Done():
			return false
		}
	})
	if err != nil && !errors.Is(err, io.EOF) {
		f.log.Debug("reading stdin failed", "err", err)
	}
}
