package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"comand", "command", 1}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
		if Distance(tt.a, tt.b) != Distance(tt.b, tt.a) {
			t.Errorf("Distance is not symmetric for %q, %q", tt.a, tt.b)
		}
	}
}
