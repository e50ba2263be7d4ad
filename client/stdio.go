package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
)

// Shutdown timings for a stdio server: after stdin closes the server gets
// stdinGrace to exit; then, on Unix, SIGTERM and termGrace, then SIGKILL, and
// on Windows its job object is terminated (see stopSteps in the per-OS files).
var (
	stdinGrace = 2 * time.Second
	termGrace  = 2 * time.Second
)

// stderrKeep is how many of the last stderr lines an ExitError carries;
// stderrKeepBytes bounds each line kept (it is shortened to stderrShow
// bytes, after redaction, when shown); stderrLogBytes bounds a logged line.
const (
	stderrKeep      = 10
	stderrKeepBytes = 2 << 10
	stderrShow      = 500
	stderrLogBytes  = 8 << 10
)

// stderrBurst and stderrPerSecond rate-limit stderr lines into the log.
const (
	stderrBurst     = 50
	stderrPerSecond = 20
)

// stdioTransport runs the server as a child process in a procGroup of its
// own (a process group on Unix, a job object on Windows) and speaks
// newline-delimited JSON over its stdin and stdout.
type stdioTransport struct {
	c   *Conn
	cmd *exec.Cmd

	// gmu guards the group against being signalled after wait has killed
	// and released it (on Windows its handle could by then name another
	// object; on Unix its id could belong to a new group).
	gmu       sync.Mutex
	group     *procGroup
	groupGone bool

	wmu   sync.Mutex // serialises writes to stdin
	stdin io.WriteCloser

	tail stderrTail

	doneCh  chan struct{}
	exitErr error
	readers sync.WaitGroup
	once    sync.Once
	closing atomic.Bool // close has begun: an exit now is no news
}

func newStdio(c *Conn) *stdioTransport {
	return &stdioTransport{c: c, doneCh: make(chan struct{})}
}

func (s *stdioTransport) start(ctx context.Context) error {
	cfg := s.c.cfg
	env, secrets, err := childEnv(&cfg, hubEnviron())
	if err != nil {
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	if len(secrets) > 0 {
		// What the server inherited beyond the safe set is masked like
		// its registry env. Nothing reads the redactor yet: the readers
		// start below.
		s.c.redactor = redact.New(append(cfg.secretValues(), secrets...))
	}
	path, err := resolveCommand(cfg.Command, env)
	if err != nil {
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	// A group of its own, so shutdown reaches whatever the server spawns
	// (npx starts node, uvx starts python).
	group, err := newProcGroup()
	if err != nil {
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Env = env
	cmd.Dir = cfg.Dir
	group.prepare(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		group.release()
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	// stdout and stderr are our own pipes rather than cmd's, so that reaping
	// the process does not close them under the readers: what the server
	// wrote just before exiting is still read.
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		group.release()
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		group.release()
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = startProcess(cmd)
	outW.Close()
	errW.Close()
	if err == nil {
		if err = group.attach(cmd.Process); err != nil {
			// Without its group the server could not be stopped whole:
			// do not run it at all.
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	if err != nil {
		stdin.Close()
		outR.Close()
		errR.Close()
		group.release()
		return fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	s.cmd, s.stdin, s.group = cmd, stdin, group
	s.c.log.Debug("started stdio server", "pid", cmd.Process.Pid, "command", cfg.Command)
	if cfg.OnProcess != nil {
		cfg.OnProcess(cmd.Process.Pid, true)
	}

	s.readers.Add(2)
	go s.readStdout(outR)
	go s.readStderr(errR)
	go s.wait(outR, errR)
	return nil
}

// drainGrace is how long the readers get, once the server process is gone,
// to read what it wrote before its pipes are closed.
const drainGrace = 500 * time.Millisecond

// wait reaps the child and reports why it ended. When the leader is gone its
// readers get drainGrace to finish, anything left in its group is killed,
// the group is released, and the pipes are closed.
func (s *stdioTransport) wait(outR, errR *os.File) {
	err := s.cmd.Wait()
	drained := make(chan struct{})
	go func() {
		s.readers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainGrace):
	}
	s.gmu.Lock()
	s.group.kill()
	s.group.release()
	s.groupGone = true
	s.gmu.Unlock()
	outR.Close()
	errR.Close()
	<-drained
	if cfg := s.c.cfg; cfg.OnProcess != nil {
		cfg.OnProcess(s.cmd.Process.Pid, false)
	}

	status := "exit status 0"
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ProcessState.String()
		} else {
			status = err.Error()
		}
	}
	if s.c.ctx.Err() != nil || s.closing.Load() {
		s.exitErr = ErrClosed
	} else {
		s.exitErr = &ExitError{Status: status, Stderr: s.tail.lines(s.c)}
		s.c.log.Warn("stdio server exited", "pid", s.cmd.Process.Pid, "status", status)
	}
	close(s.doneCh)
}

// readStdout reads the server's messages, one per line. A line over the
// size bound is not read whole: its start tells whose call it would have
// answered, and that call (or, when the start does not tell, every call in
// flight) fails at once; the rest of the line is discarded and reading goes
// on with the next one.
func (s *stdioTransport) readStdout(r io.Reader) {
	defer s.readers.Done()
	limit := s.c.maxMessage()
	br := bufio.NewReaderSize(r, 64<<10)
	// The call fails as soon as the limit is reached, not once the rest of
	// the line (maybe gigabytes) has been read past.
	tooLarge := func(prefix []byte) { s.c.oversized(prefix, limit) }
	for {
		line, err := readLine(br, limit, tooLarge)
		if errors.Is(err, ErrMessageTooLarge) {
			continue
		}
		if len(line) > 0 {
			s.handleLine(line)
		}
		if err != nil {
			return
		}
	}
}

func (s *stdioTransport) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if jsonrpc.IsBatch(line) {
		s.c.log.Warn("skipped a JSON-RPC batch on stdout; MCP servers send single messages")
		return
	}
	m, err := jsonrpc.Decode(line)
	if err != nil {
		// The start of the line is enough to recognise it; all of it
		// would cost a scan of megabytes for a log line.
		head, cut := line, false
		if len(head) > 4<<10 {
			head, cut = head[:4<<10], true
		}
		s.c.log.Warn("skipped a stdout line that is not a JSON-RPC message", "err", err, "line", s.c.excerpt(string(head), cut, 200))
		return
	}
	s.c.deliver(m, nil)
}

// readLine reads one newline-terminated line of at most max bytes. A longer
// line is reported as ErrMessageTooLarge with its first max bytes, which
// are passed to tooLarge (if set) first; then the rest of the line is read
// to its end a buffer at a time and never held. The returned slice is the
// caller's own.
func readLine(br *bufio.Reader, max int, tooLarge func(prefix []byte)) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			line = append(line, chunk[:max-len(line)]...)
			if tooLarge != nil {
				tooLarge(line)
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return line, ErrMessageTooLarge
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// readStderr logs the server's stderr line by line under its name, at warn
// level, rate-limited and redacted of secrets; it is never taken as an
// error. The last lines are kept for the ExitError.
func (s *stdioTransport) readStderr(r io.Reader) {
	defer s.readers.Done()
	br := bufio.NewReaderSize(r, 16<<10)
	tokens, last, dropped := float64(stderrBurst), time.Now(), 0
	for {
		line, err := readLine(br, 64<<10, nil)
		cut := errors.Is(err, ErrMessageTooLarge)
		text := string(bytes.TrimRight(line, "\r\n"))
		if text != "" {
			s.tail.add(text, cut)
			now := time.Now()
			tokens = min(stderrBurst, tokens+now.Sub(last).Seconds()*stderrPerSecond)
			last = now
			if tokens >= 1 {
				tokens--
				if dropped > 0 {
					s.c.log.Warn("stderr lines dropped by the rate limit", "dropped", dropped)
					dropped = 0
				}
				s.c.log.Warn(s.c.excerpt(text, cut, stderrLogBytes), "stream", "stderr")
			} else {
				dropped++
			}
		}
		if err != nil && !cut {
			return
		}
	}
}

func (s *stdioTransport) send(ctx context.Context, _ *jsonrpc.Message, data []byte) error {
	select {
	case <-s.doneCh:
		return s.exitErr
	default:
	}
	if s.stdin == nil {
		return ErrNotStarted
	}
	buf := make([]byte, 0, len(data)+1)
	buf = append(append(buf, data...), '\n')
	s.wmu.Lock()
	_, err := s.stdin.Write(buf)
	s.wmu.Unlock()
	if err != nil {
		return s.writeFailed(ctx, err)
	}
	return nil
}

// exitNoticeGrace bounds how long a failed write waits for the connection
// to see the server's exit: the readers get drainGrace once the process is
// reaped, and reaping follows the exit at once.
const exitNoticeGrace = drainGrace + time.Second

// writeFailed explains a failed write to the server's stdin. A write fails
// when the server has exited ("broken pipe", or "file already closed" once
// its exit has been reaped), moments before the connection sees the exit:
// its readers first get drainGrace to read what it wrote last. The
// ExitError, with the exit status and the last stderr lines, says why; the
// pipe's error would not. So a failed write waits for the exit, up to
// exitNoticeGrace or the end of ctx; only a server that closed its stdin
// and lives on gets the pipe's error.
func (s *stdioTransport) writeFailed(ctx context.Context, err error) error {
	if s.closing.Load() {
		return ErrClosed
	}
	timer := time.NewTimer(exitNoticeGrace)
	defer timer.Stop()
	select {
	case <-s.doneCh:
		return s.exitErr
	case <-ctx.Done():
	case <-timer.C:
	}
	return fmt.Errorf("write to server stdin: %w", err)
}

// stopStep is one step of stopping a stdio server that is still running:
// after grace, act on its group.
type stopStep struct {
	grace time.Duration
	what  string // for the log
	act   func()
}

// close shuts the server down as the spec says: close stdin and give it time
// to exit, then stop its group step by step (SIGTERM, then SIGKILL on Unix;
// TerminateJobObject on Windows). Every step happens, whatever the server
// does and whether or not the caller's context has ended, so nothing of the
// server outlives close.
func (s *stdioTransport) close() error {
	s.once.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			close(s.doneCh)
			return
		}
		s.closing.Store(true)
		// Closing stdin must not wait for a write in progress: a server
		// that stopped reading its stdin leaves a writer blocked on a
		// full pipe (holding wmu), and only the steps below free it.
		stdinClosed := make(chan struct{})
		go func() {
			defer close(stdinClosed)
			s.stdin.Close()
		}()
		defer func() { <-stdinClosed }()
		for _, step := range s.group.stopSteps() {
			select {
			case <-s.doneCh:
				return // wait has reaped it and cleared its group
			case <-time.After(step.grace):
				s.c.log.Debug("stdio server still running; stopping its group", "step", step.what)
				s.gmu.Lock()
				if !s.groupGone {
					step.act()
				}
				s.gmu.Unlock()
			}
		}
		<-s.doneCh
	})
	return nil
}

func (s *stdioTransport) done() <-chan struct{} { return s.doneCh }
func (s *stdioTransport) err() error            { return s.exitErr }

// stderrLines returns the last lines the server wrote to its stderr,
// redacted, for an error that explains a failure.
func (s *stdioTransport) stderrLines() []string { return s.tail.lines(s.c) }

func (s *stdioTransport) pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// stderrTail keeps the last stderrKeep lines of a server's stderr, each at
// most stderrKeepBytes long, as the server wrote them: they are redacted
// when shown, which the few that are shown can afford.
type stderrTail struct {
	mu  sync.Mutex
	buf []stderrLine
}

type stderrLine struct {
	text string
	cut  bool // text is the start of a longer line
}

func (t *stderrTail) add(text string, cut bool) {
	if len(text) > stderrKeepBytes {
		text, cut = text[:stderrKeepBytes], true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, stderrLine{text, cut})
	if len(t.buf) > stderrKeep {
		t.buf = t.buf[len(t.buf)-stderrKeep:]
	}
}

// lines returns the kept lines redacted of c's secrets and shortened to
// stderrShow bytes.
func (t *stderrTail) lines(c *Conn) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, len(t.buf))
	for i, l := range t.buf {
		out[i] = c.excerpt(l.text, l.cut, stderrShow)
	}
	return out
}
