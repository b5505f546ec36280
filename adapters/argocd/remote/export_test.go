package remote

import "time"

// HelperProcess is the pid of p's helper, 0 before it started: tests kill
// it mid-call.
func HelperProcess(p *Pool) int {
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	if p.h.cmd == nil || p.h.cmd.Process == nil {
		return 0
	}
	return p.h.cmd.Process.Pid
}

// SetHelloTimeout shortens the handshake's bound for a test.
func SetHelloTimeout(d time.Duration) { helloTimeout = d }
