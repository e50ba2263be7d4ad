package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kservice "github.com/kardianos/service"
)

// fakeRunner is a service manager running the program: Run starts it, and
// stops it when told to.
type fakeRunner struct {
	p    kservice.Interface
	stop chan struct{} // closed to ask the service to stop
}

func (r *fakeRunner) Run() error {
	if err := r.p.Start(nil); err != nil {
		return err
	}
	<-r.stop
	return r.p.Stop(nil)
}

func TestServeUnderManager(t *testing.T) {
	open := func(r *fakeRunner) func(kservice.Interface) (runner, error) {
		return func(p kservice.Interface) (runner, error) {
			r.p = p
			return r, nil
		}
	}

	t.Run("stop request cancels the hub", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		running := make(chan struct{})
		go func() { <-running; close(r.stop) }()
		err := serveUnderManager(open(r), func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return nil
		}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a hub that fails ends the service", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		defer close(r.stop)
		boom := errors.New("listen tcp 127.0.0.1:7733: address already in use")
		err := serveUnderManager(open(r), func(context.Context) error { return boom }, time.Minute)
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want %v", err, boom)
		}
	})

	t.Run("a hub that does not stop", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		release := make(chan struct{})
		defer close(release)
		running := make(chan struct{})
		go func() { <-running; close(r.stop) }()
		err := serveUnderManager(open(r), func(context.Context) error {
			close(running)
			<-release
			return nil
		}, 10*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "did not stop") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("no service manager", func(t *testing.T) {
		ran := false
		err := serveUnderManager(func(kservice.Interface) (runner, error) {
			return nil, kservice.ErrNoServiceSystemDetected
		}, func(context.Context) error { ran = true; return nil }, time.Minute)
		if !errors.Is(err, kservice.ErrNoServiceSystemDetected) || ran {
			t.Fatalf("err %v, ran %v", err, ran)
		}
	})
}

// Only Windows goes through kardianos's Run: systemd and launchd stop the
// hub with SIGTERM, which serve handles itself, without a time limit of
// mcphub's.
func TestServeAsServiceOnlyOnWindows(t *testing.T) {
	run := func(context.Context) error {
		t.Error("run called through the service manager")
		return nil
	}
	for _, tc := range []struct {
		goos        string
		interactive bool
	}{{"linux", false}, {"darwin", false}, {"linux", true}, {"windows", true}} {
		handled, err := serveAsService(tc.goos, func() bool { return tc.interactive }, run)
		if handled || err != nil {
			t.Errorf("%s (interactive %v): handled %v, err %v", tc.goos, tc.interactive, handled, err)
		}
	}
	if kservice.Interactive() {
		if handled, err := Run(run); handled || err != nil {
			t.Errorf("from a shell: handled %v, err %v", handled, err)
		}
	}
}

// stoppingRunner is the Windows service manager's Run as it is: after the
// program's Stop returns, it still has to report the service stopped
// before Run returns. A process that exits in between has crashed, as far
// as Windows can tell, and is restarted.
type stoppingRunner struct {
	p            kservice.Interface
	stop         chan struct{} // closed to ask the service to stop
	stopReturned chan struct{} // closed once the program's Stop returned
	report       chan struct{} // closed to let Run report the stop and return
	mu           sync.Mutex
	events       *[]string
}

func (r *stoppingRunner) Run() error {
	if err := r.p.Start(nil); err != nil {
		return err
	}
	<-r.stop
	err := r.p.Stop(nil)
	close(r.stopReturned)
	<-r.report
	r.mu.Lock()
	*r.events = append(*r.events, "run returned")
	r.mu.Unlock()
	return err
}

func TestServeUnderManagerWaitsForTheStopReport(t *testing.T) {
	var events []string
	r := &stoppingRunner{stop: make(chan struct{}), stopReturned: make(chan struct{}), report: make(chan struct{}), events: &events}
	running := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		err := serveUnderManager(func(p kservice.Interface) (runner, error) {
			r.p = p
			return r, nil
		}, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return nil
		}, time.Minute)
		r.mu.Lock()
		events = append(events, "serve returned")
		r.mu.Unlock()
		result <- err
	}()
	<-running
	close(r.stop)
	<-r.stopReturned
	close(r.report)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(events, []string{"run returned", "serve returned"}) {
		t.Errorf("events %q: serveUnderManager returned before the manager's Run reported the stop", events)
	}
}
