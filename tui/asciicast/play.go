package asciicast

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ErrNotACast marks a file that is not an asciicast v2 recording; the
// error names the file and line.
var ErrNotACast = fmt.Errorf("not an asciicast v2 recording")

// Play writes the output events of the asciicast v2 recording r (called
// name in errors) to out, waiting between them as recorded divided by
// speed; speed 0 plays without waiting. It stops when ctx ends.
func Play(ctx context.Context, name string, r io.Reader, out io.Writer, speed float64) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		return fmt.Errorf("%w: %s is empty", ErrNotACast, name)
	}
	var header struct{ Version int }
	if err := json.Unmarshal(sc.Bytes(), &header); err != nil || header.Version != 2 {
		return fmt.Errorf("%w: %s line 1: not an asciicast v2 header", ErrNotACast, name)
	}
	last, line := 0.0, 1
	for sc.Scan() {
		line++
		var ev []json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			return fmt.Errorf("%w: %s line %d: not an asciicast event", ErrNotACast, name, line)
		}
		var at float64
		var kind, data string
		if json.Unmarshal(ev[0], &at) != nil || json.Unmarshal(ev[1], &kind) != nil || json.Unmarshal(ev[2], &data) != nil {
			return fmt.Errorf("%w: %s line %d: not an asciicast event", ErrNotACast, name, line)
		}
		if kind != "o" {
			continue
		}
		if speed > 0 && at > last {
			select {
			case <-time.After(time.Duration((at - last) / speed * float64(time.Second))):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		last = at
		if _, err := out.Write([]byte(data)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}
