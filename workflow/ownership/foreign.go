package ownership

// FieldOwner pairs a field path with the owner the map gives it.
type FieldOwner struct {
	Field string
	Owner Owner
}

// ForeignFields are the fields o's manager sets and enforces that m gives
// to another owner, and the rule that says so (file:line): what an apply by
// o's manager would take back from its owner. None when no rule matches o
// (the ownership check reports it unowned) or o writes only its own fields.
// An object whose fields are unknown counts whole, under its rule's owner.
func ForeignFields(m Map, o ManagedObject) ([]FieldOwner, string) {
	c := compileMap(m)
	i := c.ruleFor(&o)
	if i < 0 {
		return nil, ""
	}
	r := m.Rules[i]
	rule := c.at(r.Line)
	if len(o.Fields) == 0 {
		if r.Owner != o.Manager {
			return []FieldOwner{{Field: "the whole object", Owner: r.Owner}}, rule
		}
		return nil, rule
	}
	var out []FieldOwner
	for _, f := range o.Fields {
		if owner := r.FieldOwner(f); owner != o.Manager && !ignored(&o, f) {
			out = append(out, FieldOwner{Field: f, Owner: owner})
		}
	}
	return out, rule
}
