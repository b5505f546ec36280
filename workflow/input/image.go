package input

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/relcap/relcap/workflow/fault"
)

// imageFlags take an image reference: checked against the reference
// grammar before a release is started, so a typo is a usage error and
// not a release that fails at its promotion.
var imageFlags = map[string]bool{"image": true}

// The OCI distribution reference grammar: [host[:port]/]path[:tag][@digest],
// the path's components lowercase, the tag at most 128 characters.
var (
	refComponent = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
	refHost      = `(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?`
	// imageRef is compiled on first use, not at every start of relcap
	// (docs/PERFORMANCE.md, "Start-up").
	imageRef = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:` + refHost + `/)?` + refComponent + `(?:/` + refComponent + `)*` +
			`(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`)
	})
)

// CheckImageRef checks an image reference given as what (a flag): a
// repository with a tag or a digest, as a registry spells it.
func CheckImageRef(what, value string) error {
	if err := CheckFreeText(what, value); err != nil {
		return err
	}
	const example = "e.g. registry.example.com/team/web:1.4.2 or …/web@sha256:<64 hex digits>"
	switch {
	case value == "":
		return fmt.Errorf("%w: %s is empty: give an image reference, %s", fault.ErrUsage, what, example)
	case strings.TrimSpace(value) != value || strings.ContainsAny(value, " \t"):
		return fmt.Errorf("%w: %s %s is not an image reference: it has spaces; %s", fault.ErrUsage, what, QuoteInput(value), example)
	case len(value) > 255+128+80:
		return fmt.Errorf("%w: %s %s is not an image reference: too long", fault.ErrUsage, what, QuoteInput(value))
	case !imageRef().MatchString(value):
		return fmt.Errorf("%w: %s %s is not an image reference: a repository (lowercase letters, digits, '.', '_', '-', '/') with a :tag or an @sha256:digest, %s", fault.ErrUsage, what, QuoteInput(value), example)
	}
	return nil
}
