// Package stores opens an object store from its location: a directory, or
// s3://BUCKET[/PREFIX]. It is the one place that knows every kind of store,
// as outbox/providers is for provider kinds.
package stores

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/s3"
	"github.com/tidemark/tidemark/redact"
)

// S3 holds what an s3:// location does not say: where the server is and
// how to sign in.
type S3 struct {
	Endpoint string // empty: AWS's own endpoints
	// PathStyle addresses the bucket in the path; nil: path style exactly
	// when an Endpoint is given (most self-hosted servers need it).
	PathStyle *bool
	Region    string // default us-east-1
	AccessKey string
	SecretKey string
}

// Check refuses, as invalid input naming flag, a location Open would
// refuse before it opens anything: an s3:// one without a bucket or
// carrying credentials, or a URL of another scheme. A command checks its
// settings with it before anything runs.
func Check(flag, loc string) error {
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, _, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return tidemark.Invalidf(flag, redact.URL(loc, false), "want s3://BUCKET[/PREFIX]")
		}
		if at := strings.LastIndexByte(bucket, '@'); at >= 0 {
			// The location is shown (tidemark config, serve, the store's
			// recorded identity); the credentials are secret settings.
			shown := "s3://" + redact.Marker + rest[at:]
			return tidemark.Invalidf(flag, shown, "a store's location carries no credentials: "+
				"give them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
		}
		return nil
	}
	if strings.Contains(loc, "://") {
		return tidemark.Invalidf(flag, redact.URL(loc, false), "want a directory or s3://BUCKET[/PREFIX]")
	}
	return nil
}

// Open opens the store at loc. flag names the setting loc came from, for
// the error that refuses it.
func Open(flag, loc string, s3cfg S3) (objstore.Store, error) {
	if err := Check(flag, loc); err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		pathStyle := s3cfg.Endpoint != ""
		if s3cfg.PathStyle != nil {
			pathStyle = *s3cfg.PathStyle
		}
		region := s3cfg.Region
		if region == "" {
			region = "us-east-1"
		}
		return s3.New(s3.Config{Bucket: bucket, Prefix: prefix, Endpoint: s3cfg.Endpoint, PathStyle: pathStyle,
			Region: region, AccessKey: s3cfg.AccessKey, SecretKey: s3cfg.SecretKey})
	}
	return dir.Open(loc)
}

// IsLocal reports whether loc is a directory on this machine.
func IsLocal(loc string) bool { return !strings.Contains(loc, "://") }

// Canonical is loc in the form recorded with the store's identity:
// s3://bucket/prefix without redundant slashes, or an absolute directory
// with its symbolic links resolved.
func Canonical(loc string) string {
	if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if prefix = strings.Trim(path.Clean("/"+prefix), "/"); prefix != "" {
			return "s3://" + bucket + "/" + prefix
		}
		return "s3://" + bucket
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	if real, err := filepath.EvalSymlinks(loc); err == nil {
		loc = real
	}
	return loc
}

// Locate is where a user finds the object key in the store at loc: a URL
// for s3://, an absolute path for a directory.
func Locate(loc, key string) string {
	if strings.HasPrefix(loc, "s3://") {
		return strings.TrimRight(loc, "/") + "/" + key
	}
	if abs, err := filepath.Abs(loc); err == nil {
		loc = abs
	}
	return filepath.Join(loc, filepath.FromSlash(key))
}
