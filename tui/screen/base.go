package screen

import (
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
)

// Base is what every screen keeps the same way: its colours, its keys
// (K is the screen's key map), the area it draws in, the root's clock and
// the release run as the root last broadcast it. A screen embeds it and
// passes every message to Observe before handling it; a screen with
// more to redo on a resize or a theme change wraps SetSize or SetTheme.
type Base[K any] struct {
	Theme  theme.Theme
	Keys   K
	Width  int
	Height int
	// Now is the root's clock, from the last TickMsg.
	Now time.Time
	// effort is the release's effort figure at Now (TickMsg).
	effort effort.Figure

	release *workflow.Release
	running bool
	runErr  error
}

// NewBase returns the base of a screen drawn with th and driven by km.
func NewBase[K any](th theme.Theme, km K) Base[K] {
	return Base[K]{Theme: th, Keys: km}
}

// SetSize sets the area the screen draws in.
func (b *Base[K]) SetSize(w, h int) { b.Width, b.Height = w, h }

// SetTheme switches styles after the background colour is known.
func (b *Base[K]) SetTheme(th theme.Theme) { b.Theme = th }

// Observe notes what the root broadcasts to every screen: the run state
// (RunStateMsg), the release each event carries (EventMsg) and the clock
// (TickMsg). A message without a release snapshot keeps the last one.
func (b *Base[K]) Observe(msg tea.Msg) {
	switch msg := msg.(type) {
	case RunStateMsg:
		b.running, b.runErr = msg.Running, msg.Err
		if msg.Release != nil {
			b.release = msg.Release
		}
	case EventMsg:
		if msg.Event.Release != nil {
			b.release = msg.Event.Release
		}
	case TickMsg:
		b.Now, b.effort = msg.Now, msg.Effort
	}
}

// Effort is the release's effort figure as of the last tick: the number
// the status bar shows in the same frame. A screen shows effort from this
// and keeps no clock of its own.
func (b Base[K]) Effort() effort.Figure { return b.effort }

// Release is the latest snapshot of the release, or nil before the root
// has sent one.
func (b Base[K]) Release() *workflow.Release { return b.release }

// Running reports whether a run of the release is going.
func (b Base[K]) Running() bool { return b.running }

// RunErr is how the last run ended: nil, an error wrapping
// fault.ErrBlocked (a person must act), or a failure.
func (b Base[K]) RunErr() error { return b.runErr }

// Sized reports whether the screen has an area to draw in; View returns
// "" until it has.
func (b Base[K]) Sized() bool { return b.Width > 0 && b.Height > 0 }

// Fit is Fit(s, Width, Height): the screen's view at exactly its size.
func (b Base[K]) Fit(s string) string { return Fit(s, b.Width, b.Height) }

// Runs counts the runs a program started in the background (a release
// run, a drill), so the program's owner waits for the last one to save
// before it returns; once closed it starts no more, which a
// sync.WaitGroup alone cannot do safely (Add after Wait has started). It
// is shared by every copy of a model.
type Runs struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Start counts a run about to start; false means the program is closing
// and the run must not start.
func (r *Runs) Start() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

// Done says a run counted by Start has ended.
func (r *Runs) Done() { r.wg.Done() }

// CloseAndWait refuses new runs and waits for the running ones.
func (r *Runs) CloseAndWait() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}
