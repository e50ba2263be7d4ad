package probe_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
)

// Example probes a stdio server as mcphub probe -- COMMAND does, and calls
// one of its tools: the request is checked into a Plan, then Run connects,
// prints what the server offers and the call's result, and returns the
// report (which --json prints with WriteJSON). The server here is mcphub's
// demo server, run by this example's own binary (see TestMain).
func Example() {
	exe, _ := os.Executable()
	req := probe.Request{
		Target:  registry.Target{Transport: "auto", Env: []string{demoEnv}},
		Calls:   []string{"add"},
		Args:    []string{`{"a":1,"b":2}`},
		Version: "example",
	}
	plan, err := req.Plan([]string{exe})
	if err != nil {
		fmt.Println(err)
		return
	}
	report, err := probe.Run(context.Background(), plan, probe.Options{Timeout: 30 * time.Second, Out: os.Stdout, Log: io.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("\n%d tools, %d call\n", len(report.Tools), len(report.Calls))
	// Output:
	// server        mcphub-demo test
	// protocol      2025-11-25 over stdio
	// capabilities  prompts, resources, tools
	// instructions  A demo server built into mcphub: try the countdown tool to see progress.
	//
	// tools (3)
	//   echo       Returns the text it is given.
	//   add        Adds two numbers.
	//   countdown  Counts down from n (at most 100), one step every 100 ms, reporting progress.
	//
	// prompts (1)
	//   greet  Greets someone.
	//
	// resources (1)
	//   demo://readme  readme
	//
	// resource templates (0)
	//
	// result of add:
	// 3
	//
	// 3 tools, 1 call
}
