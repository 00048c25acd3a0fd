package sqslocal

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strings"
)

// md5Hex is the MD5OfMessageBody the SDK recomputes and compares.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// md5OfAttributes computes MD5OfMessageAttributes (and MD5OfMessageSystemAttributes) the way
// SQS does: attributes sorted by name, each encoded as length-prefixed name, length-prefixed
// data type, a transport byte (1 string, 2 binary) and the length-prefixed value. It returns
// "" for no attributes, as AWS then omits the field.
func md5OfAttributes(attrs map[string]attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		put([]byte(n))
		put([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			h.Write([]byte{2})
			put(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			put([]byte(deref(a.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
