package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// launcher starts components and records each in the state file at once,
// so that a failed or interrupted `up` leaves a state `down` can clean.
type launcher struct {
	dir   string
	out   io.Writer
	start time.Time

	mu    sync.Mutex
	state State
	procs []*running
}

func (l *launcher) launch(c Component) (*running, error) {
	r, err := start(l.dir, c)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.procs = append(l.procs, r)
	l.state.Processes = append(l.state.Processes, r.Process)
	return r, WriteState(l.dir, l.state)
}

// launchReady starts the components together and waits until all are
// ready; any that fails to start or dies is reported with its log.
func (l *launcher) launchReady(ctx context.Context, timeout time.Duration, cs ...Component) error {
	t := time.Now()
	rs := make([]*running, len(cs))
	for i, c := range cs {
		r, err := l.launch(c)
		if err != nil {
			return err
		}
		rs[i] = r
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i := range cs {
		wg.Go(func() { errs[i] = rs[i].waitReady(ctx, cs[i].Ready) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	l.logf("%s ready in %s", strings.Join(names, ", "), since(t))
	return nil
}

// logf prints one progress line with the time since `up` began.
func (l *launcher) logf(format string, args ...any) {
	fmt.Fprintf(l.out, "[%6.1fs] %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// allRunning fails, with its log, for any component that passed its
// readiness check and died later during start-up.
func (l *launcher) allRunning() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, r := range l.procs {
		select {
		case <-r.exited:
			errs = append(errs, fmt.Errorf("%s exited during start-up (%v); last lines of %s:\n%s", r.Name, r.err, r.Log, logTail(r.Log, 25)))
		default:
		}
	}
	return errors.Join(errs...)
}

// abort stops everything started so far, newest first, and keeps the
// directory (and its logs) for the post-mortem.
func (l *launcher) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.procs) - 1; i >= 0; i-- {
		if err := stop(l.procs[i].Process, 5*time.Second); err != nil {
			fmt.Fprintf(l.out, "relcap-lab: %v\n", err)
		}
	}
}
