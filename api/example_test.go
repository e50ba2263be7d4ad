package api_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphub/mcphub/api"
)

// A client decodes the hub's /readyz answer into api.Status and reads each
// server's state against the State constants.
func ExampleStatus() {
	body := `{"version":"v1.0.0","url":"http://127.0.0.1:7733/mcp","sessions":1,
		"servers":[{"name":"github","state":"connected","tools":12,"tools_total":12,"prompts":0,"resources":0,"restarts":0},
		           {"name":"notes","state":"disabled","tools":0,"tools_total":0,"prompts":0,"resources":0,"restarts":0}]}`
	var st api.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range st.Servers {
		fmt.Printf("%s connected=%v tools=%d\n", s.Name, s.State == api.StateConnected, s.Tools)
	}
	// Output:
	// github connected=true tools=12
	// notes connected=false tools=0
}
