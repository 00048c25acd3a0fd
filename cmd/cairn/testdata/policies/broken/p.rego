package p

deny contains msg if {
	msg := undefined_function(input)
}
