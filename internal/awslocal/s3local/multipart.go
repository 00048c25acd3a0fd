package s3local

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"

	"github.com/rclone/gofakes3"
)

// minPartSize is the smallest size S3 accepts for a part that is not the last one.
// See https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html ("Part size: 5 MiB
// to 5 GiB. There is no minimum size limit on the last part of your multipart upload").
const minPartSize = 5 << 20

// completeRequest is the body of CompleteMultipartUpload.
type completeRequest struct {
	Parts []struct {
		PartNumber int
		ETag       string
	} `xml:"Part"`
}

// listedPart is a part of an upload as ListParts lists it.
type listedPart struct {
	etag string
	size int64
}

// complete serves CompleteMultipartUpload with S3's checks gofakes3 lacks (parts in
// ascending order, each uploaded with the ETag given, every part but the last at least
// 5 MiB), and answers the ETag S3 computes for a multipart object: the MD5 of the
// concatenated binary MD5s of its parts, a dash and the number of parts
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html,
// "the ETag value ... is a calculation based on the checksum of each individual part").
// It reports whether it answered.
func (s *Service) complete(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	q := r.URL.Query()
	q.Del("x-id")
	id := q.Get("uploadId")
	if r.Method != http.MethodPost || key == "" || id == "" || len(q) != 1 {
		return false
	}
	parts, ok := s.uploadedParts(r, bucket, key, id)
	if !ok {
		return false // no such upload (or one completed already): gofakes3 answers
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "IncompleteBody", "could not read the request body: "+err.Error(), bucket)
		return true
	}
	var in completeRequest
	if err := xml.Unmarshal(body, &in); err != nil || len(in.Parts) == 0 {
		writeError(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema", bucket)
		return true
	}
	for i, p := range in.Parts {
		if i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber {
			writeError(w, http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.", bucket,
				[2]string{"UploadId", id})
			return true
		}
		if up, ok := parts[p.PartNumber]; !ok || strings.Trim(p.ETag, `"`) != strings.Trim(up.etag, `"`) {
			writeError(w, http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.", bucket,
				[2]string{"UploadId", id}, [2]string{"PartNumber", strconv.Itoa(p.PartNumber)}, [2]string{"ETag", p.ETag})
			return true
		}
	}
	digest := md5.New()
	for i, p := range in.Parts {
		up := parts[p.PartNumber]
		if i < len(in.Parts)-1 && up.size < minPartSize {
			writeError(w, http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.", bucket,
				[2]string{"ProposedSize", strconv.FormatInt(up.size, 10)}, [2]string{"MinSizeAllowed", strconv.Itoa(minPartSize)},
				[2]string{"PartNumber", strconv.Itoa(p.PartNumber)}, [2]string{"ETag", p.ETag})
			return true
		}
		sum, _ := hex.DecodeString(strings.Trim(up.etag, `"`))
		digest.Write(sum)
	}
	etag := fmt.Sprintf(`"%x-%d"`, digest.Sum(nil), len(in.Parts))
	rec := httptest.NewRecorder()
	r.Body = readCloser(body)
	s.handler.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		var res struct{ ETag string }
		if xml.Unmarshal(out, &res) == nil && res.ETag != "" {
			s.multipartETags[bucket+"/"+key] = map[string]string{res.ETag: etag}
			out = bytes.Replace(out, []byte(xmlText(res.ETag)), []byte(xmlText(etag)), 1)
		}
	}
	copyHeader(w.Header(), rec.Header())
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(out)
	return true
}

// uploadedParts lists the parts of an upload through gofakes3's ListParts, page by page;
// false when the upload does not exist.
func (s *Service) uploadedParts(r *http.Request, bucket, key, id string) (map[int]listedPart, bool) {
	parts := map[int]listedPart{}
	marker := 0
	for {
		u := &url.URL{Path: r.URL.Path, RawQuery: url.Values{"uploadId": {id}, "part-number-marker": {strconv.Itoa(marker)}}.Encode()}
		req := httptest.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
		req.Header = r.Header.Clone()
		req.Header.Del("Content-Length")
		req.Header.Del("Content-Md5")
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return nil, false
		}
		var page gofakes3.ListMultipartUploadPartsResult
		if err := xml.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			return nil, false
		}
		for _, p := range page.Parts {
			parts[p.PartNumber] = listedPart{etag: p.ETag, size: p.Size}
		}
		if !page.IsTruncated || page.NextPartNumberMarker <= marker {
			return parts, true
		}
		marker = page.NextPartNumberMarker
	}
}

// multipartETag returns the ETag S3 gives bucket/key when its content's MD5 ETag is plain
// and the object was made by a multipart upload; plain otherwise.
func (s *Service) multipartETag(bucket, key, plain string) string {
	if e, ok := s.multipartETags[bucket+"/"+key][plain]; ok {
		return e
	}
	return plain
}

// plainETag is the inverse of multipartETag, for conditional headers naming an object's
// multipart ETag.
func (s *Service) plainETag(bucket, key, etag string) string {
	for plain, e := range s.multipartETags[bucket+"/"+key] {
		if e == etag || strings.Trim(e, `"`) == strings.Trim(etag, `"`) {
			return plain
		}
	}
	return etag
}

// translateConditions rewrites If-Match and If-None-Match headers naming a multipart
// ETag to the content's MD5, which gofakes3 compares.
func (s *Service) translateConditions(r *http.Request, bucket, key string) {
	for _, h := range []string{"If-Match", "If-None-Match", "X-Amz-Copy-Source-If-Match"} {
		if v := r.Header.Get(h); v != "" && v != "*" {
			r.Header.Set(h, s.plainETag(bucket, key, v))
		}
	}
}

// etagWriter rewrites the ETag header of an object's answer to its multipart ETag.
type etagWriter struct {
	http.ResponseWriter
	s           *Service
	bucket, key string
}

func (e etagWriter) WriteHeader(code int) {
	e.fix()
	e.ResponseWriter.WriteHeader(code)
}

func (e etagWriter) Write(b []byte) (int, error) {
	e.fix()
	return e.ResponseWriter.Write(b)
}

// fix rewrites the ETag header; it is also called after the handler returns, for answers
// (HEAD) that wrote neither a status nor a body.
func (e etagWriter) fix() {
	if v := e.Header().Get("ETag"); v != "" {
		e.Header().Set("ETag", e.s.multipartETag(e.bucket, e.key, v))
	}
}

// forgetSinglePut drops the multipart ETag of bucket/key for content a plain PutObject
// has just written again.
func (s *Service) forgetSinglePut(w http.Header, bucket, key string) {
	if m := s.multipartETags[bucket+"/"+key]; m != nil {
		delete(m, w.Get("ETag"))
	}
}

func xmlText(s string) string {
	var b bytes.Buffer
	xmlEscape(&b, s)
	return b.String()
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}
