package secretslocal

import (
	"crypto/rand"
	"math/big"
	"strings"
)

// punctuation is the punctuation Secrets Manager draws passwords from.
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// PasswordInput is GetRandomPassword's request, and an AWS::SecretsManager::Secret's
// GenerateSecretString; nil booleans take Secrets Manager's defaults.
type PasswordInput struct {
	PasswordLength          int64
	ExcludeCharacters       string
	ExcludeNumbers          bool
	ExcludePunctuation      bool
	ExcludeUppercase        bool
	ExcludeLowercase        bool
	IncludeSpace            bool
	RequireEachIncludedType *bool
}

// Password returns a random password as GetRandomPassword makes it: PasswordLength (32 by
// default, 1 to 4096) characters from the classes not excluded, less ExcludeCharacters,
// with at least one of each class unless RequireEachIncludedType is false.
// See https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetRandomPassword.html
func Password(in PasswordInput) (string, error) {
	n := in.PasswordLength
	if n == 0 {
		n = 32
	}
	if n < 1 || n > 4096 {
		return "", invalidParameter("Password length must be between 1 and 4096.")
	}
	keep := func(set string) string {
		return strings.Map(func(r rune) rune {
			if strings.ContainsRune(in.ExcludeCharacters, r) {
				return -1
			}
			return r
		}, set)
	}
	var classes []string
	for _, c := range []struct {
		excluded bool
		set      string
	}{
		{in.ExcludeLowercase, "abcdefghijklmnopqrstuvwxyz"},
		{in.ExcludeUppercase, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
		{in.ExcludeNumbers, "0123456789"},
		{in.ExcludePunctuation, punctuation},
		{!in.IncludeSpace, " "},
	} {
		if set := keep(c.set); !c.excluded && set != "" {
			classes = append(classes, set)
		}
	}
	if len(classes) == 0 {
		return "", invalidParameter("The password can't be generated: every character is excluded.")
	}
	require := in.RequireEachIncludedType == nil || *in.RequireEachIncludedType
	if require && int64(len(classes)) > n {
		return "", invalidParameter("The password length is too short to include a character of each required type.")
	}
	all := strings.Join(classes, "")
	out := make([]byte, n)
	for i := range out {
		out[i] = all[randInt(len(all))]
	}
	if require {
		// Put one character of each class at distinct random places.
		places := perm(int(n))
		for i, set := range classes {
			out[places[i]] = set[randInt(len(set))]
		}
	}
	return string(out), nil
}

func randInt(n int) int {
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
	return int(v.Int64())
}

func perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := randInt(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}
