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
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Shutdown timings for a stdio server: after stdin closes the server gets
// stdinGrace to exit; then, on Unix, SIGTERM and termGrace, then SIGKILL, and
// on Windows its job object is terminated (see stopSteps in the per-OS files).
var (
	stdinGrace = 2 * time.Second
	termGrace  = 2 * time.Second
)

// stderrKeep is how many of the last stderr lines an ExitError carries.
const stderrKeep = 10

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
}

func newStdio(c *Conn) *stdioTransport {
	return &stdioTransport{c: c, doneCh: make(chan struct{})}
}

// childEnv is the environment a stdio server gets: the variables of
// inheritedEnv (PATH and HOME on Unix) from mcphub's own environment, then
// what the registry gives it. Nothing else of mcphub's environment (tokens
// for other servers, say) leaks to the child.
func childEnv(extra map[string]string) []string {
	env := make([]string, 0, len(extra)+len(inheritedEnv))
	for _, k := range inheritedEnv {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

func (s *stdioTransport) start(ctx context.Context) error {
	cfg := s.c.cfg
	env := childEnv(cfg.Env)
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
	err = cmd.Start()
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
	if s.c.ctx.Err() != nil {
		s.exitErr = ErrClosed
	} else {
		s.exitErr = &ExitError{Status: status, Stderr: s.tail.lines()}
		s.c.log.Warn("stdio server exited", "pid", s.cmd.Process.Pid, "status", status)
	}
	close(s.doneCh)
}

func (s *stdioTransport) readStdout(r io.Reader) {
	defer s.readers.Done()
	max := s.c.cfg.MaxMessageBytes
	if max <= 0 {
		max = 16 << 20
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, max)
		if len(line) > 0 {
			s.handleLine(line)
		}
		if errors.Is(err, ErrMessageTooLarge) {
			s.c.log.Error("skipped a stdout line over the size limit", "limit_bytes", max)
			continue
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
		s.c.log.Warn("skipped a stdout line that is not a JSON-RPC message", "err", err, "line", truncate(line, 200))
		return
	}
	s.c.deliver(m, nil)
}

// readLine reads one newline-terminated line of at most max bytes. A longer
// line is consumed to its end and reported as ErrMessageTooLarge. The
// returned slice is the caller's own.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, ErrMessageTooLarge
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// readStderr logs the server's stderr line by line under its name, at warn
// level, rate-limited; it is never taken as an error. The last lines are kept
// for the ExitError.
func (s *stdioTransport) readStderr(r io.Reader) {
	defer s.readers.Done()
	br := bufio.NewReaderSize(r, 16<<10)
	tokens, last, dropped := float64(stderrBurst), time.Now(), 0
	for {
		line, err := readLine(br, 64<<10)
		text := string(bytes.TrimRight(line, "\r\n"))
		if text != "" {
			s.tail.add(text)
			now := time.Now()
			tokens = min(stderrBurst, tokens+now.Sub(last).Seconds()*stderrPerSecond)
			last = now
			if tokens >= 1 {
				tokens--
				if dropped > 0 {
					s.c.log.Warn("stderr lines dropped by the rate limit", "dropped", dropped)
					dropped = 0
				}
				s.c.log.Warn(text, "stream", "stderr")
			} else {
				dropped++
			}
		}
		if err != nil && !errors.Is(err, ErrMessageTooLarge) {
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
	defer s.wmu.Unlock()
	if _, err := s.stdin.Write(buf); err != nil {
		select {
		case <-s.doneCh:
			return s.exitErr
		default:
		}
		return fmt.Errorf("write to server stdin: %w", err)
	}
	return nil
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
// TerminateJobObject on Windows).
func (s *stdioTransport) close() error {
	s.once.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			close(s.doneCh)
			return
		}
		s.wmu.Lock()
		s.stdin.Close()
		s.wmu.Unlock()
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

func (s *stdioTransport) pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// stderrTail keeps the last stderrKeep lines of a server's stderr.
type stderrTail struct {
	mu  sync.Mutex
	buf []string
}

func (t *stderrTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > 500 {
		line = line[:500] + "…"
	}
	t.buf = append(t.buf, line)
	if len(t.buf) > stderrKeep {
		t.buf = t.buf[len(t.buf)-stderrKeep:]
	}
}

func (t *stderrTail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.buf...)
}
