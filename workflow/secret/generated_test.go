package secret_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/secret/secrettest"
)

// TestScrubLeavesNoFormOfAGeneratedSecret is the scrubber's share of the
// standing attack: secrets of every shape (multi-line with \n and \r\n,
// a four-digit PIN, URL-unsafe, unicode with a combining mark, a number,
// random ones from a printed seed) are learnt as relcap learns them (their
// value, once), then every encoding the scanner knows is written inside
// the contexts relcap's outputs put them in (a Terraform attribute, a JSON
// string, a journal line holding JSON, a bare log line); after Scrub, the
// scanner finds none. Forms the scanner cannot look for (1–2 characters,
// booleans, armour lines) are listed in the log, not dropped.
//
// The end-to-end scans (cmd/relcap, TestNoSecretAnywhere…) look for every
// encoding the scanner knows in what relcap really wrote; this test asks
// Scrub only for the encodings relcap's writers or the tools it runs
// produce (see producedByRelcapOrItsTools).
func TestScrubLeavesNoFormOfAGeneratedSecret(t *testing.T) {
	t.Parallel()
	g, err := secrettest.NewGenerator()
	if err != nil {
		t.Fatal(err)
	}
	secrets := append(g.Sensitive(), g.Token("forge token", 40), g.Password("postgres password", 12))
	set := secret.NewSet()
	for _, s := range secrets {
		if s.Kind == secrettest.Number {
			set.AddValue(json.Number(s.Value)) // a number is learnt as one (Terraform's JSON)
			continue
		}
		set.Add(s.Value)
	}
	scan := secrettest.NewScanner(secrets...)
	for _, f := range scan.Forms() {
		if !producedByRelcapOrItsTools(f.Encoding) {
			continue
		}
		contexts := []string{
			`      + value = "` + f.Text + `"`,
			`{"data":{"value":"` + f.Text + `"}}`,
		}
		if !f.Token {
			// A short value is masked only as a whole quoted value;
			// these put a long one inside other text.
			contexts = append(contexts, "Error: "+f.Text+"\n", "            "+f.Text+"\n", "a"+f.Text+"b")
		}
		for i, c := range contexts {
			scan.Scan(fmt.Sprintf("Scrub(context %d of %s)", i, f.Encoding), []byte(set.Scrub(c)))
		}
	}
	scan.Report(t, g.Replay())
}

// producedByRelcapOrItsTools reports whether an encoding is one relcap's
// writers (JSON, Go quoting, URLs, base64) or Terraform, git and the
// databases it drives may write a learnt value in. Hex dumps, \u-escaped
// non-ASCII (Python's and jq -a's JSON), every byte percent-escaped and
// the decomposed unicode form are not: the end-to-end scans still look
// for them in everything relcap wrote.
func producedByRelcapOrItsTools(encoding string) bool {
	for _, not := range []string{"nfd", "\\u-escaped", "go-quoted ascii", "every byte escaped"} {
		if strings.Contains(encoding, not) {
			return false
		}
	}
	last := encoding[strings.LastIndex(encoding, " ")+1:]
	return last != "hex" && last != "HEX" || strings.HasSuffix(encoding, "lower-case hex")
}
