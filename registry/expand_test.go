package registry

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestExpandExported(t *testing.T) {
	env := envOf("A", "1")
	out, unset, err := Expand("${A}$${A}$x${B}", env)
	if err != nil || out != "1${A}$x" || !reflect.DeepEqual(unset, []string{"B"}) {
		t.Errorf("Expand = %q %v %v, want %q [B] <nil>", out, unset, err, "1${A}$x")
	}
	for _, in := range []string{"${env:A}", "${input:tok}", "${A", "${a-b}"} {
		if _, _, err := Expand(in, env); err == nil {
			t.Errorf("Expand(%q) err = nil, want a refusal", in)
		}
	}
}

func TestExpandHomeExported(t *testing.T) {
	home := filepath.FromSlash("/home/u")
	env := envOf("HOME", home)
	tests := []struct{ in, out string }{
		{"~", home},
		{"~/x/y", filepath.Join(home, "x", "y")},
		{"~user/x", "~user/x"},
		{"/abs/~", "/abs/~"},
		{"rel", "rel"},
	}
	for _, tt := range tests {
		if got := ExpandHome(tt.in, env); got != tt.out {
			t.Errorf("ExpandHome(%q) = %q, want %q", tt.in, got, tt.out)
		}
	}
}
