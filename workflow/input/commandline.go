package input

// typedIDFlags are the flags that take an identifier, by name, whichever
// command has them: each value is checked against its kind's grammar
// (CheckID) before the command opens or records anything.
var typedIDFlags = map[string]IDKind{
	"release":  IDRelease,
	"plan":     IDPlan,
	"env":      IDEnv,
	"drill":    IDDrill,
	"resume":   IDRehearsal,
	"cleanup":  IDRehearsal,
	"actor":    IDPrincipal,
	"person":   IDPrincipal,
	"approver": IDPrincipal,
	"lock-id":  IDLock,
}

// commandIDFlags are identifier flags whose name means something else in
// other commands (report's --to is a date).
var commandIDFlags = map[string]IDKind{
	"relcap rollback --to": IDRelease,
}

// freeTextFlags take text that is journaled, signed or shown: checked by
// CheckFreeText (one line, no control character, bounded).
var freeTextFlags = map[string]bool{
	"reason": true, "what": true, "comment": true, "i-know": true, "force-unverified": true,
	"image": true, "revision": true, "tz": true, "format": true, "from": true, "to": true,
}

// positionalIDs are the commands whose arguments are identifiers.
var positionalIDs = map[string]IDKind{
	"relcap resume":         IDRelease,
	"relcap journal show":   IDSession,
	"relcap journal verify": IDSession,
	"relcap journal replay": IDSession,
}

// GivenFlag is one flag a command line gave: its name and its values (one,
// or each of a list's; a principal trimmed, as the commands trim it).
type GivenFlag struct {
	Name   string
	Values []string
}

// CheckCommandLine checks every identifier and free text a command line
// gave the command at path (as "relcap journal show"), flags in the order
// given and then the arguments: the first bad one is returned, quoted
// escaped and cut short.
func CheckCommandLine(path string, flags []GivenFlag, args []string) error {
	for _, f := range flags {
		kind, ok := commandIDFlags[path+" --"+f.Name]
		if !ok {
			kind, ok = typedIDFlags[f.Name]
		}
		for _, v := range f.Values {
			switch {
			case ok && v == "":
				// empty: the command's default, or its own "needs --x"
			case ok:
				if err := CheckID(kind, "--"+f.Name, v); err != nil {
					return err
				}
			case imageFlags[f.Name]:
				if err := CheckImageRef("--"+f.Name, v); err != nil {
					return err
				}
			case freeTextFlags[f.Name]:
				if err := CheckFreeText("--"+f.Name, v); err != nil {
					return err
				}
			case IsNumberFlag(f.Name):
				if err := checkNumber(f.Name, v); err != nil {
					return err
				}
			}
		}
	}
	if kind, ok := positionalIDs[path]; ok {
		for _, v := range args {
			if err := CheckID(kind, string(kind), v); err != nil {
				return err
			}
		}
	}
	return nil
}
