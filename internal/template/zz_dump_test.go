package template

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZDump(t *testing.T) {
	for _, f := range strings.Split(os.Getenv("DUMP"), ",") {
		if f == "" {
			continue
		}
		b, _ := os.ReadFile(f)
		tp, err := Parse(b)
		if err != nil {
			fmt.Println(f, err)
			continue
		}
		for _, p := range tp.Check() {
			w := ""
			if p.Warning {
				w = "warning: "
			}
			fmt.Printf("%s:%s%s\n", f[strings.LastIndex(f, "/")+1:], w, p)
		}
	}
}
