package signing

import (
	"fmt"
	"os"
)

// CheckPeopleFile reads the people file at path, when the project names
// one (relcap validate), with the parser that verifies approvals, and
// returns its principals or every problem it has as file:line: message;
// shown is the path as messages name it.
func CheckPeopleFile(path, shown string) (principals []string, problems []string) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: cannot read the people file: %v", shown, err)}
	}
	for _, err := range CheckAllowedSigners(shown, data) {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, problems
	}
	people, err := ParseAllowedSigners(shown, data)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return people.Principals(), nil
}
