package tokencount

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/termtext"
)

// WriteText prints the report for a person, as mcphub tokens does: with a
// profile, a line naming it; the servers' table with the total (in search
// mode the listed tools' table, the cost in full and the servers' table of
// that), the client caps, with tools every tool's table, and the profiles'
// table. It is the text twin of the report's JSON.
func (r *Report) WriteText(w io.Writer, tools bool) {
	if r.Profile != "" {
		fmt.Fprintf(w, "profile %s (%s, %s mode): a client is given %s\n\n", r.Profile, r.Endpoint, r.Mode, termtext.HowMany(r.Total.Tools, "tool"))
	}
	if r.Mode == modeSearch {
		rows := make([][]string, 0, len(r.Listed)+1)
		for _, t := range r.Listed {
			rows = append(rows, []string{t.Name, fmt.Sprint(t.Tokens)})
		}
		rows = append(rows, []string{"TOTAL", fmt.Sprint(r.Total.Tokens)})
		writeNumberTable(w, []string{"TOOL", "TOKENS"}, rows, 1)
		fmt.Fprintf(w, "\n%s\n", searchSaving(r.Total, r.Full))
		if len(r.Servers) > 0 {
			fmt.Fprintln(w)
			writeNumberTable(w, []string{"SERVER", "TOOLS", "TOKENS"}, r.serverRows(), 1)
		}
	} else {
		writeNumberTable(w, []string{"SERVER", "TOOLS", "TOKENS"}, r.serverRows(), 1)
	}
	fmt.Fprintln(w)
	r.writeCaps(w)
	fmt.Fprintf(w, "counted with %s; Claude and other models count with their own tokenizers, so these are estimates\n", r.Encoding)
	if tools && len(r.Tools) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, len(r.Tools))
		for i, t := range r.Tools {
			rows[i] = []string{t.Name, t.Server, fmt.Sprint(t.Tokens)}
		}
		writeNumberTable(w, []string{"TOOL", "SERVER", "TOKENS"}, rows, 2)
	}
	r.writeProfiles(w)
}

// WriteNotes prints, on w, the notes that go with the report: that the
// profile counted has a problem in its table, so its endpoint serves
// nothing meanwhile (st, the hub's view of the profile, nil when unknown),
// and how many tools the hub's catalog names no server for.
func (r *Report) WriteNotes(w io.Writer, st *api.ProfileStatus) {
	if st != nil && st.Problem != "" {
		fmt.Fprintf(w, "note: profile %s serves nothing until its table is fixed (mcphub validate shows the problems); these are the tools it selects meanwhile\n", r.Profile)
	}
	if n := r.UnknownTools(); n > 0 {
		fmt.Fprintf(w, "note: the hub's catalog names no server for %s, counted under %s\n", termtext.HowMany(n, "tool"), UnknownServer)
	}
}

// serverRows are the servers' table: each server's tools and tokens, and
// the view's total.
func (r *Report) serverRows() [][]string {
	rows := make([][]string, 0, len(r.Servers)+1)
	for _, s := range r.Servers {
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens)})
	}
	return append(rows, []string{"TOTAL", fmt.Sprint(r.Full.Tools), fmt.Sprint(r.Full.Tokens)})
}

// writeCaps names each client cap the tools a client is given exceed, or
// says that they fit every one.
func (r *Report) writeCaps(w io.Writer) {
	exceeded := 0
	for _, c := range ToolCaps {
		if r.Total.Tools > c.Cap {
			fmt.Fprintf(w, "exceeds %s's cap of %s (has %d)\n", c.Client, c.Wording(true), r.Total.Tools)
			exceeded++
		}
	}
	if exceeded == 0 {
		caps := make([]string, len(ToolCaps))
		for i, c := range ToolCaps {
			caps[i] = c.Client + " " + c.Wording(false)
		}
		fmt.Fprintf(w, "fits every known client's tool cap (%s)\n", strings.Join(caps, ", "))
	}
}

// writeProfiles prints the profiles' table, when the report has one: no
// counts for a profile with a problem (the hub serves nothing for it), "?"
// for one that could not be counted.
func (r *Report) writeProfiles(w io.Writer) {
	if len(r.Profiles) == 0 {
		return
	}
	fmt.Fprintln(w)
	rows := make([][]string, len(r.Profiles))
	for i, p := range r.Profiles {
		listedTools, listedTokens, fullTools, fullTokens := fmt.Sprint(p.Total.Tools), fmt.Sprint(p.Total.Tokens), "-", "-"
		switch {
		case p.Problem != "":
			listedTools, listedTokens = "-", "-"
		case p.Error != "":
			listedTools, listedTokens = "?", "?"
		case p.Mode == modeSearch:
			fullTools, fullTokens = fmt.Sprint(p.Full.Tools), fmt.Sprint(p.Full.Tokens)
		}
		rows[i] = []string{p.Name, p.Mode, listedTools, listedTokens, fullTools, fullTokens}
	}
	writeNumberTable(w, []string{"PROFILE", "MODE", "TOOLS", "TOKENS", "TOOLS IN FULL", "TOKENS IN FULL"}, rows, 2)
	for _, p := range r.Profiles {
		if p.Problem != "" {
			fmt.Fprintf(w, "profile %s serves nothing until its table is fixed (mcphub validate shows the problems)\n", p.Name)
		}
	}
	fmt.Fprintln(w, "mcphub tokens --profile NAME counts one profile's tools by server")
}

// searchSaving says what search mode saves against listing the view's
// tools in full: "in full its 5 tools would cost 275 tokens; search mode
// saves 18%", to the nearest percent; about the same when the two differ
// by less than 1%, and what it costs more when it does.
func searchSaving(listed, full Total) string {
	if full.Tools == 0 {
		return "its servers offer no tools yet, so search mode finds none (see mcphub status)"
	}
	msg := fmt.Sprintf("in full its %s would cost %d tokens; ", termtext.HowMany(full.Tools, "tool"), full.Tokens)
	diff := full.Tokens - listed.Tokens
	switch {
	case 100*max(diff, -diff) < full.Tokens:
		return msg + "search mode costs about the same"
	case diff < 0:
		return msg + fmt.Sprintf("search mode costs %s more, as its tools are few", termtext.HowMany(-diff, "token"))
	}
	return msg + fmt.Sprintf("search mode saves %d%%", (200*diff+full.Tokens)/(2*full.Tokens))
}

// writeNumberTable prints rows of names and numbers, columns padded to
// their widest cell and two spaces apart; the columns from numbers on hold
// numbers, aligned right.
func writeNumberTable(w io.Writer, header []string, rows [][]string, numbers int) {
	all := append([][]string{header}, rows...)
	widths := make([]int, len(header))
	for _, r := range all {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, r := range all {
		cells := make([]string, len(r))
		for i, cell := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i >= numbers {
				cells[i] = pad + cell
			} else {
				cells[i] = cell + pad
			}
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(cells, "  "), " "))
	}
}
