package p

deny contains "x" if input.bad
