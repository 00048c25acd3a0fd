package template

import (
	"errors"
	"strings"
)

// subWord is a variable of an Fn::Sub string: a name (a parameter, resource, pseudo
// parameter or the Sub's own variable), or Resource.Attribute for Fn::GetAtt.
type subWord struct {
	name, res, attr string
}

// subVariables returns the variables of an Fn::Sub string as CloudFormation reads them:
// ${Name} and ${Resource.Attribute}, with the spaces inside the braces ignored (${ AWS::Region }
// is AWS::Region); ${!Literal} writes ${Literal} and is no variable; a ${ never closed is
// text. An empty ${} is an error.
func subVariables(s string) ([]subWord, error) {
	var out []subWord
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out, nil
		}
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return out, nil
		}
		name := strings.TrimSpace(s[:j])
		s = s[j+1:]
		if strings.HasPrefix(name, "!") {
			continue // ${!Literal} (or ${ !Literal }) writes ${Literal}
		}
		if name == "" {
			return out, errors.New("${} names no variable: write ${Name}, or ${!} for the text ${}")
		}
		w := subWord{name: name}
		if res, attr, ok := strings.Cut(name, "."); ok {
			w.res, w.attr = res, attr
		}
		out = append(out, w)
	}
}
