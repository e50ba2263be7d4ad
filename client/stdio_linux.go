package client

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// A stdio server must not outlive a hub that is killed outright (SIGKILL,
// the OOM killer): Close never runs then. On Linux the kernel can end the
// child with its parent: Pdeathsig = SIGKILL.
//
// The parent that counts is the thread that forked the child, not the
// process (prctl(2), PR_SET_PDEATHSIG): the signal fires as soon as that
// thread exits, while the hub lives on. Go's threads normally live as long
// as the process, but the runtime ends a thread whose goroutine exits while
// locked to it (runtime.LockOSThread without UnlockOSThread), which any
// library may do. So every server is started from one goroutine that locks
// itself to its thread and never returns: that thread lives exactly as long
// as the process. Starting servers one at a time there costs nothing, since
// fork and exec are serialised by syscall.ForkLock anyway; the goroutine is
// one per process, not per connection, and is meant to live until the
// process ends.
//
// The signal reaches the server itself, not what it spawned: its process
// group outlives it, and the next hub stops that through the process record
// (ReapLeftovers).

// spawner is the goroutine that starts servers.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startProcess starts cmd, prepared by procGroup.prepare, so that the
// kernel kills it if the hub dies.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go spawnLoop(spawner.reqs)
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawner.reqs <- req
	return <-req.done
}

// spawnLoop runs on a thread of its own for the life of the process.
func spawnLoop(reqs <-chan spawnRequest) {
	runtime.LockOSThread() // never unlocked: the thread must never exit
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}
