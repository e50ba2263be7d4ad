package clientconf

import "slices"

// Vars lists, sorted and once each, the variables the enabled imported
// servers refer to: those whose absence from the hub's environment would
// keep a server from starting, which the caller asks the hub about.
func (r ImportResult) Vars() []string {
	var names []string
	for _, s := range r.Specs {
		if !s.Disabled {
			names = append(names, s.Vars()...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// UnsetVars is what an imported server lacks in the hub's environment, as
// DisableUnset found it. It holds variable names, never values.
type UnsetVars struct {
	// Server is the imported server's name.
	Server string
	// Missing are variables it refers to that the hub's environment lacks.
	Missing []string
	// Moved are variables that now stand for a literal secret of the
	// file, which this process does not hold with that value: the hub
	// cannot have it either.
	Moved []string
	// Unsure are variables that stand for a literal secret this process
	// holds with that value but the hub's environment lacks: a hub started
	// from here would have it.
	Unsure []string
	// Disabled is set when the server was marked disabled (Missing or
	// Moved is not empty).
	Disabled bool
}

// DisableUnset marks disabled, in r.Specs, every enabled server that
// refers to a variable of unset (those the hub's environment lacks) or to
// a variable that now stands for a literal secret this process does not
// hold with that value, so that an import never adds a server that can
// only fail. It returns, in the order of r.Specs, each server that lacks a
// variable and what it lacks.
func (r *ImportResult) DisableUnset(unset []string) []UnsetVars {
	secrets := map[string]ImportedSecret{}
	for _, s := range r.Secrets {
		secrets[s.Var] = s
	}
	var out []UnsetVars
	for i := range r.Specs {
		s := &r.Specs[i]
		if s.Disabled {
			continue
		}
		u := UnsetVars{Server: s.Name}
		for _, v := range s.Vars() {
			sec, replaced := secrets[v]
			switch {
			case replaced && sec.Env == SecretSame && slices.Contains(unset, v):
				u.Unsure = append(u.Unsure, v)
			case replaced && sec.Env != SecretSame:
				u.Moved = append(u.Moved, v)
			case !replaced && slices.Contains(unset, v):
				u.Missing = append(u.Missing, v)
			}
		}
		if len(u.Missing)+len(u.Moved) > 0 {
			s.Disabled, u.Disabled = true, true
		}
		if u.Disabled || len(u.Unsure) > 0 {
			out = append(out, u)
		}
	}
	return out
}
