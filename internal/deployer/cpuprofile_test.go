package deployer_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"runtime/pprof"
	"time"
)

// deployerLabel marks the goroutines of the deployer's handler (and those they start) in
// CPU profiles, as apart from the emulator's.
var deployerLabel = pprof.Labels("function", "deployer")

// labelledCPU reads a CPU profile (runtime/pprof's gzipped profile.proto) and returns the
// CPU time of the samples labelled function=deployer, and of all samples.
func labelledCPU(profile []byte) (deployer, all time.Duration, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(profile))
	if err != nil {
		return 0, 0, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return 0, 0, err
	}
	type sample struct {
		values []int64
		labels [][2]int64 // key, str: indexes of the string table
	}
	var (
		samples []sample
		strs    []string
		valueAt = -1 // the index of cpu/nanoseconds among a sample's values
		types   [][2]int64
	)
	err = fields(raw, func(num int, wire int, v uint64, b []byte) error {
		switch num {
		case 1: // sample_type: ValueType{type, unit}
			var t [2]int64
			err := fields(b, func(n, _ int, v uint64, _ []byte) error {
				if n == 1 || n == 2 {
					t[n-1] = int64(v)
				}
				return nil
			})
			types = append(types, t)
			return err
		case 2: // sample
			var s sample
			err := fields(b, func(n, w int, v uint64, b []byte) error {
				switch {
				case n == 2 && w == 2: // packed values
					return varints(b, func(x uint64) { s.values = append(s.values, int64(x)) })
				case n == 2:
					s.values = append(s.values, int64(v))
				case n == 3: // Label{key, str}
					var l [2]int64
					err := fields(b, func(n, _ int, v uint64, _ []byte) error {
						if n == 1 || n == 2 {
							l[n-1] = int64(v)
						}
						return nil
					})
					s.labels = append(s.labels, l)
					return err
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 6: // string_table
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	for i, t := range types {
		if int(t[0]) < len(strs) && int(t[1]) < len(strs) && strs[t[0]] == "cpu" && strs[t[1]] == "nanoseconds" {
			valueAt = i
		}
	}
	if valueAt < 0 {
		return 0, 0, fmt.Errorf("the profile has no cpu/nanoseconds values")
	}
	for _, s := range samples {
		if valueAt >= len(s.values) {
			continue
		}
		d := time.Duration(s.values[valueAt])
		all += d
		for _, l := range s.labels {
			if int(l[0]) < len(strs) && int(l[1]) < len(strs) && strs[l[0]] == "function" && strs[l[1]] == "deployer" {
				deployer += d
				break
			}
		}
	}
	return deployer, all, nil
}

// fields walks the fields of a protobuf message: each field's number, wire type, and its
// value (varint) or bytes (length-delimited).
func fields(b []byte, do func(num, wire int, v uint64, b []byte) error) error {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return fmt.Errorf("malformed profile")
		}
		b = b[n:]
		num, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			v, n := uvarint(b)
			if n <= 0 {
				return fmt.Errorf("malformed profile")
			}
			b = b[n:]
			if err := do(num, wire, v, nil); err != nil {
				return err
			}
		case 2:
			l, n := uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return fmt.Errorf("malformed profile")
			}
			if err := do(num, wire, 0, b[n:n+int(l)]); err != nil {
				return err
			}
			b = b[n+int(l):]
		case 1:
			b = b[8:]
		case 5:
			b = b[4:]
		default:
			return fmt.Errorf("malformed profile: wire type %d", wire)
		}
	}
	return nil
}

func varints(b []byte, do func(uint64)) error {
	for len(b) > 0 {
		v, n := uvarint(b)
		if n <= 0 {
			return fmt.Errorf("malformed profile")
		}
		do(v)
		b = b[n:]
	}
	return nil
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}
