package clientconf_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/registry"
)

// Reading another client's file: its servers become hub.toml specs, and a
// literal secret becomes a variable to set.
func ExampleImport() {
	data := []byte(`{
	  // Claude Desktop allows no comments, but VS Code and Zed do.
	  "mcpServers": {
	    "GitHub": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
	               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}},
	    "hub": {"url": "http://127.0.0.1:7733/mcp"}
	  }
	}`)
	res, err := clientconf.Import(data, clientconf.ImportOptions{
		Hub: registry.Self{Listens: []string{"127.0.0.1:7733"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Specs {
		fmt.Println("server", s.Name, s.Command, s.Env)
	}
	fmt.Println("skipped", res.HubEntries)
	for _, s := range res.Secrets {
		fmt.Println("set", s.Var)
	}
	// Output:
	// server github npx map[GITHUB_PERSONAL_ACCESS_TOKEN:${GITHUB_PERSONAL_ACCESS_TOKEN}]
	// skipped [hub]
	// set GITHUB_PERSONAL_ACCESS_TOKEN
}

// Writing the hub's entry into a client's file: what is there stays, a
// backup of the old file is kept, and a second run changes nothing.
func ExampleWrite() {
	dir, _ := os.MkdirTemp("", "clientconf")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(`{
  "mcpServers": {
    "notes": {"command": "notes-server"}
  }
}
`), 0o600)

	cursor, _ := clientconf.Lookup("cursor")
	e, _ := clientconf.Hub{}.Entry(cursor, false, "http://127.0.0.1:7733/mcp", nil, "")
	res, err := clientconf.Write(cursor, file, "mcphub", e, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("added", res.Added, "backup kept:", res.Backup != "")
	out, _ := os.ReadFile(file)
	fmt.Print(string(out))
	again, _ := clientconf.Write(cursor, file, "mcphub", e, nil)
	fmt.Println("wrote again:", again.Wrote)
	// Output:
	// added mcphub backup kept: true
	// {
	//   "mcpServers": {
	//     "notes": {"command": "notes-server"},
	//     "mcphub": {
	//       "url": "http://127.0.0.1:7733/mcp"
	//     }
	//   }
	// }
	// wrote again: false
}

// connect prints what Write did for a person, its warnings on stderr; with
// --json, the Result itself.
func ExampleResult_WriteText() {
	c, _ := clientconf.Lookup("cursor")
	res := clientconf.Result{File: "/home/u/.cursor/mcp.json", Wrote: true, Backup: "/home/u/.cursor/mcp.json.mcphub-backup-20260101T000000Z",
		Entry: "mcphub", Title: c.Title}
	res.AddNotes(c, false, "", "")
	res.WriteText(os.Stdout, os.Stderr)
	// Output:
	// backed up /home/u/.cursor/mcp.json to /home/u/.cursor/mcp.json.mcphub-backup-20260101T000000Z
	// wrote server "mcphub" into /home/u/.cursor/mcp.json
}
