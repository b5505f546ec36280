package tui

// held is the cockpit opened on a release without running it (plain
// relcap): the decision map, and a notice saying how to go on. The
// resume key (or a screen's own "continue") starts the run.
func (m Model) held() Model {
	m.hold = false
	m.active = scrHome
	if m.release == nil || m.release.Status.Done() {
		return m
	}
	msg := "release " + m.release.ID + " is " + string(m.release.Status) + ": press " + m.km.Global.Resume.Help().Key + " to resume it"
	if cur, ok := m.release.Current(); ok {
		if err := m.release.MissingInput(cur); err != nil {
			msg = firstLine(err.Error())
		}
	}
	m.setNotice(msg, false)
	return m
}
