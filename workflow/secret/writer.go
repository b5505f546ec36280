package secret

import (
	"io"
	"sync"
	"time"
)

// Writer returns a writer that scrubs what it writes to w. A secret split
// across writes is masked all the same: the writer lets go of what can no
// longer be part of a secret's form and holds back the end of what it was
// given while that end could still begin one (usually nothing: only when
// its last bytes are the first bytes of some form). Flush writes what is
// held back, scrubbed; Close flushes and closes w when w is a Closer. Call
// one of them when the output ends, or its last bytes may never be seen.
//
// When w is a file (a terminal), so is the writer: its Fd, Read and Close
// are w's, so terminal detection and raw mode still see the terminal. A
// terminal's writer also lets go of what it holds back once nothing more
// was written for terminalIdle: a full-screen program's last frame (its
// final "show the cursor" sequence ends in an "h", the first letter of
// many a secret) must not wait for a frame that never comes. Programs
// write a terminal whole lines and whole frames; a secret split across
// two writes that far apart is not masked there.
func (s *Set) Writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	sw := &writer{s: s, w: w, before: noByte}
	if f, ok := w.(file); ok {
		sw.idle = terminalIdle
		return fileWriter{writer: sw, f: f}
	}
	return sw
}

// terminalIdle is how long a terminal's writer holds back the end of what
// it was given while nothing more comes.
const terminalIdle = 100 * time.Millisecond

// Flusher is the writer Writer returns: Flush writes what it holds back.
type Flusher interface {
	io.Writer
	Flush() error
}

// Flush flushes w if it is a Set's writer (or any Flusher); a nil error
// otherwise.
func Flush(w io.Writer) error {
	if f, ok := w.(Flusher); ok {
		return f.Flush()
	}
	return nil
}

// file is what terminal libraries look for: an *os.File or its like.
type file interface {
	io.ReadWriteCloser
	Fd() uintptr
}

type writer struct {
	s *Set
	w io.Writer

	mu     sync.Mutex
	held   []byte // the end of the stream, not yet decided
	before int    // the last byte let go, for a token's left edge

	idle  time.Duration // a terminal's: let go of held bytes after this
	timer *time.Timer
}

// Write scrubs what p completes and reports all of p written when that
// was.
func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.s.current()
	if m == nil && len(w.held) == 0 {
		if _, err := w.w.Write(p); err != nil {
			return 0, err
		}
		if len(p) > 0 {
			w.before = int(p[len(p)-1])
		}
		return len(p), nil
	}
	w.held = append(w.held, p...)
	text := string(w.held)
	cut := len(text)
	if m != nil {
		cut = m.undecided(text, w.before)
	}
	if cut > 0 {
		if err := w.emit(m, text[:cut], byteAt(text, cut)); err != nil {
			return 0, err
		}
		w.held = append(w.held[:0], text[cut:]...)
	}
	if len(w.held) > 0 && w.idle > 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(w.idle, func() { _ = w.Flush() })
		} else {
			w.timer.Reset(w.idle)
		}
	}
	return len(p), nil
}

// emit writes part, scrubbed, followed in the stream by after.
func (w *writer) emit(m *matcher, part string, after int) error {
	out := part
	if m != nil {
		out = m.scrub(part, w.before, after)
	}
	w.before = int(part[len(part)-1])
	_, err := io.WriteString(w.w, out)
	return err
}

// Flush writes what is held back, scrubbed.
func (w *writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	text := string(w.held)
	w.held = w.held[:0]
	return w.emit(w.s.current(), text, noByte)
}

// Close flushes, then closes the underlying writer if it is a Closer.
func (w *writer) Close() error {
	err := w.Flush()
	if c, ok := w.w.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

type fileWriter struct {
	*writer
	f file
}

func (f fileWriter) Read(p []byte) (int, error) { return f.f.Read(p) }
func (f fileWriter) Fd() uintptr                { return f.f.Fd() }
