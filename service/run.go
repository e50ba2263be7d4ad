package service

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	kservice "github.com/kardianos/service"
)

// stopWait bounds how long the Windows service control manager's stop
// request waits for the hub to stop its servers and close its store.
const stopWait = 15 * time.Second

// Run runs the hub under the Windows service control manager when it
// started this process: the program it starts must answer it, or it is
// killed as unresponsive. It returns handled=false at once on other
// systems, where systemd and launchd stop the hub with SIGTERM, which serve
// handles as from a shell (and wait for it as long as they are set to),
// and when mcphub runs from a shell (or a client); the caller then serves
// as usual. Otherwise run gets a context that is cancelled when the manager
// asks the service to stop, and Run returns once run has.
func Run(run func(ctx context.Context) error) (handled bool, err error) {
	return serveAsService(runtime.GOOS, kservice.Interactive, run)
}

// serveAsService is Run on goos, interactive telling whether a shell rather
// than a service manager started mcphub.
func serveAsService(goos string, interactive func() bool, run func(ctx context.Context) error) (handled bool, err error) {
	if goos != "windows" || interactive() {
		return false, nil
	}
	open := func(p kservice.Interface) (runner, error) {
		return kservice.New(p, &kservice.Config{Name: Name, Option: kservice.KeyValue{"UserService": true}})
	}
	return true, serveUnderManager(open, run, stopWait)
}

// UnderManager reports whether a service manager started mcphub: systemd
// (the unit's parent is systemd), launchd (pid 1) or the Windows service
// control manager. serve then keeps its console quiet, since the manager
// files it beside the hub's own log.
func UnderManager() bool { return !kservice.Interactive() }

// runner is the part of a kardianos service that runs the program.
type runner interface {
	Run() error
}

// serveUnderManager runs run as the kservice.Interface of the service open
// returns. When the manager asks the service to stop, it returns once run
// has returned and so has the manager's Run, which reports the service
// stopped: a process that exits before that is a service that crashed,
// which the manager restarts. When run ends by itself (the hub failed),
// that is the result at once: the process exits, and the manager restarts
// it as on any failure.
func serveUnderManager(open func(kservice.Interface) (runner, error), run func(context.Context) error, stopWait time.Duration) error {
	p := newProgram(run, stopWait)
	defer p.cancel()
	s, err := open(p)
	if err != nil {
		return fmt.Errorf("service manager: %w", err)
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run() }()
	finish := func(err error) error {
		if err != nil {
			return fmt.Errorf("service manager: %w", err)
		}
		if !p.started() {
			return nil
		}
		select {
		case <-p.done:
			return p.err
		default:
			return fmt.Errorf("the hub did not stop within %s of the service manager's stop request", stopWait)
		}
	}
	select {
	case <-p.done:
		if p.ctx.Err() == nil {
			return p.err // the hub ended by itself
		}
		// Stopped on request: the manager's Run has yet to report it.
		return finish(<-ran)
	case err := <-ran:
		return finish(err)
	}
}

// program is the kservice.Interface that runs the hub: Start runs it in the
// background, Stop cancels it and waits for it to end.
type program struct {
	run      func(context.Context) error
	ctx      context.Context
	cancel   context.CancelFunc
	stopWait time.Duration
	once     sync.Once
	done     chan struct{} // closed when run has returned
	err      error         // what run returned, once done is closed
	begun    chan struct{} // closed by Start
}

func newProgram(run func(context.Context) error, stopWait time.Duration) *program {
	ctx, cancel := context.WithCancel(context.Background())
	return &program{run: run, ctx: ctx, cancel: cancel, stopWait: stopWait,
		done: make(chan struct{}), begun: make(chan struct{})}
}

// Start runs the hub in the background: the manager waits for Start to
// return before it reports the service as running.
func (p *program) Start(kservice.Service) error {
	p.once.Do(func() {
		close(p.begun)
		go func() {
			defer close(p.done)
			p.err = p.run(p.ctx)
		}()
	})
	return nil
}

// Stop cancels the hub's context and waits, up to stopWait, for it to stop
// its servers and close its store.
func (p *program) Stop(kservice.Service) error {
	p.cancel()
	if !p.started() {
		return nil
	}
	t := time.NewTimer(p.stopWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	return nil
}

// started reports whether Start has run.
func (p *program) started() bool {
	select {
	case <-p.begun:
		return true
	default:
		return false
	}
}
