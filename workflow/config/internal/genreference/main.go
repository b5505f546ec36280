// Command genreference writes docs/CONFIG.md and docs/relcap.schema.json
// from the configuration loader's key reference (go generate
// ./workflow/config). Its one argument is the docs directory.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/relcap/relcap/workflow/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genreference DOCS_DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "genreference: "+err.Error())
		os.Exit(1)
	}
}

func write(dir string) error {
	keys, err := config.Reference()
	if err != nil {
		return err
	}
	schema, err := config.RenderSchema(keys)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		filepath.Base(config.ReferenceFile): config.RenderReference(keys),
		filepath.Base(config.SchemaFile):    schema,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
