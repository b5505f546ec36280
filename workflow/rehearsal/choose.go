package rehearsal

import "strings"

// DrillNames lists every drill's name, in the order --all runs them, for
// help text.
func DrillNames() string {
	names := make([]string, len(AllDrills))
	for i, d := range AllDrills {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// DrillsFor reads the drills a command names: one by name, every drill
// (all), or none when it names neither (a resume or a cleanup).
func DrillsFor(name string, all bool) ([]Drill, error) {
	switch {
	case name != "":
		d, err := ParseDrill(name)
		if err != nil {
			return nil, err
		}
		return []Drill{d}, nil
	case all:
		return AllDrills, nil
	}
	return nil, nil
}
