package team.bad

deny contains msg if {
	msg := x
}
