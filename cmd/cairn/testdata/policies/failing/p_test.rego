package p_test

import data.p

test_denies_without_input if {
	count(p.deny) == 1 with input as {}
}
