package store

import (
	"os"
	"testing"
)

func TestZZGenFile(t *testing.T) {
	p := os.Getenv("ZZ_GEN")
	if p == "" {
		t.Skip()
	}
	l, err := OpenSQLite(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	genLedger(t, l, 100_000, 100)
	l.Close()
}
