package main

import "bytes"

// testIO returns an IO over buffers with the given environment.
func testIO(env ...string) (*IO, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &IO{In: &bytes.Buffer{}, Out: &out, Err: &errb, Env: env}, &out, &errb
}
