package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/testkit"
)

func init() {
	fakeModes["minihub"] = func() { runMiniHub(false) }
	fakeModes["minihub-thread"] = func() { runMiniHub(true) }
}

// runMiniHub is a hub in miniature, for the tests of a hub that is killed:
// it starts a stubborn stdio server (one that ignores stdin EOF and
// SIGTERM), prints the server's PID and waits to be killed. With
// threadExits, the server is started from a goroutine locked to its thread
// that then exits, ending that thread; the server must outlive the thread.
func runMiniHub(threadExits bool) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "minihub: "+format+"\n", args...)
		os.Exit(1)
	}
	exe, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	c := New(Config{Name: "child", Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{"MCPHUB_FAKE_SERVER": "stubborn"}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !threadExits {
		err = c.Start(ctx)
	} else {
		// The main goroutine keeps the main thread, which the runtime
		// never ends, so the goroutine below runs on another one.
		runtime.LockOSThread()
		tid, done := make(chan int, 1), make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			tid <- syscall.Gettid()
			done <- c.Start(ctx)
		}()
		task := fmt.Sprintf("/proc/self/task/%d", <-tid)
		err = <-done
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, serr := os.Stat(task); os.IsNotExist(serr) {
				break
			}
			if time.Now().After(deadline) {
				fail("the locked thread did not exit")
			}
		}
		if err == nil {
			_, err = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`))
		}
	}
	if err != nil {
		fail("%v", err)
	}
	fmt.Println(c.PID())
	select {}
}

// A hub killed with SIGKILL cannot stop its servers; the kernel does
// (Pdeathsig), also when the thread that happened to start the server has
// ended since.
func TestStdioServerDiesWithKilledHub(t *testing.T) {
	for _, mode := range []string{"minihub", "minihub-thread"} {
		t.Run(mode, func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			hub := exec.Command(exe, "-test.run=^$")
			hub.Env = append(os.Environ(), "MCPHUB_FAKE_SERVER="+mode)
			stderr := &testkit.SyncBuffer{}
			hub.Stderr = stderr
			out, err := hub.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := hub.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() {
				hub.Wait()
				close(exited)
			}()
			t.Cleanup(func() {
				killProcess(hub.Process.Pid)
				<-exited
			})
			line := make(chan string, 1)
			go func() {
				s, _ := bufio.NewReader(out).ReadString('\n')
				line <- s
			}()
			var pid int
			select {
			case s := <-line:
				if pid, err = strconv.Atoi(strings.TrimSpace(s)); err != nil || pid <= 0 {
					t.Fatalf("the mini hub printed %q\nstderr:\n%s", s, stderr)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the mini hub did not start its server\nstderr:\n%s", stderr)
			}
			t.Cleanup(func() {
				if !processGone(pid) {
					syscall.Kill(-pid, syscall.SIGKILL)
				}
			})
			if processGone(pid) {
				t.Fatalf("the server %d is not running", pid)
			}
			killProcess(hub.Process.Pid)
			<-exited
			waitFor(t, 5*time.Second, "the server to die with its hub", func() bool { return processGone(pid) })
		})
	}
}
