// Package s3 is an object store on S3-compatible storage through the AWS
// SDK for Go v2. Conditional writes use the server's own compare-and-swap:
// If-None-Match: * to create, If-Match: ETAG to replace one version.
// Servers disagree on the answer to If-Match on a missing key (404 or 412)
// and may answer 409 to concurrent conditional writes; all of them mean the
// condition lost, and Put reports objstore.ErrPrecondition.
//
// The generation is stored as user metadata (x-amz-meta-tidemark-generation),
// returned by Get and Head; listings carry ETags but no metadata, so List
// reports generation 0.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
)

const generationMeta = "tidemark-generation"

// Config names a bucket and how to reach it.
type Config struct {
	Bucket string
	// Prefix is prepended to every key ("wiki/" → "wiki/changes/x.html").
	Prefix string
	// Endpoint is the server's URL (empty: AWS's own endpoints).
	Endpoint  string
	Region    string // default us-east-1
	AccessKey string
	SecretKey string
	// PathStyle addresses the bucket in the path (most self-hosted servers
	// need it).
	PathStyle  bool
	HTTPClient *http.Client
}

// Store is an S3 object store.
type Store struct {
	client *s3.Client
	bucket string
	prefix string
}

var _ objstore.Store = (*Store)(nil)

// New returns a store over cfg.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, tidemark.Invalidf("s3 bucket", "", "is required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	opt := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.PathStyle,
		// Checksums only where the API requires them: not every
		// S3-compatible server understands the newer trailing checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opt.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	if cfg.AccessKey != "" {
		opt.Credentials = credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")
	}
	if cfg.HTTPClient != nil {
		opt.HTTPClient = cfg.HTTPClient
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Store{client: s3.New(opt), bucket: cfg.Bucket, prefix: prefix}, nil
}

// Client is the underlying SDK client.
func (s *Store) Client() *s3.Client { return s.client }

func (s *Store) full(key string) string { return s.prefix + key }

func statusOf(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func codeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// deniedCodes are the S3 error codes of a refused signature, key or
// permission; a few come with 400 rather than 403.
var deniedCodes = map[string]bool{
	"AccessDenied": true, "SignatureDoesNotMatch": true, "InvalidAccessKeyId": true,
	"InvalidToken": true, "ExpiredToken": true, "TokenRefreshRequired": true,
	"AllAccessDisabled": true, "AccountProblem": true, "InvalidSecurity": true,
	"AuthorizationHeaderMalformed": true, "RequestTimeTooSkewed": true,
}

// denied reports whether err is the server's refusal of our credentials
// or their rights: a 401 or 403 (a HEAD's has no code, the SDK calls it
// "Forbidden"), or one of deniedCodes. A 403 about the object's state
// (InvalidObjectState: an archived object) is not.
func denied(err error) bool {
	code := codeOf(err)
	if deniedCodes[code] {
		return true
	}
	st := statusOf(err)
	return (st == http.StatusUnauthorized || st == http.StatusForbidden) && code != "InvalidObjectState"
}

// noBucket reports whether err is the server's answer that the bucket does
// not exist. A HEAD's answer has no body, so no code: a HEAD in a missing
// bucket reads as a missing object.
func noBucket(err error) bool { return codeOf(err) == "NoSuchBucket" }

// DeniedError is the server's refusal of our credentials or of their
// rights over a key. It matches objstore.ErrDenied, and so
// tidemark.ErrRefused and tidemark.ErrInvalid: the configuration is wrong
// and no retry fixes it.
type DeniedError struct {
	Op, Bucket, Key string
	Status          int
	Code            string // the server's error code ("SignatureDoesNotMatch"), or ""
	Err             error
}

func (e *DeniedError) Error() string {
	why := strconv.Itoa(e.Status)
	if e.Code != "" {
		why += " " + e.Code
	}
	return fmt.Sprintf("s3 %s %s: the store refused our credentials (%s)", e.Op, e.Key, why)
}

func (e *DeniedError) Is(target error) bool {
	return target == objstore.ErrDenied || target == tidemark.ErrRefused || target == tidemark.ErrInvalid
}

func (e *DeniedError) Unwrap() error { return e.Err }

// Hint names the settings to check.
func (e *DeniedError) Hint() string {
	return fmt.Sprintf("check the S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and TIDEMARK_S3_REGION,"+
		" TIDEMARK_S3_ENDPOINT), and that the key may read, write, list and delete in bucket %s;"+
		" this is configuration to fix, retrying will not help", e.Bucket)
}

func (s *Store) wrap(op, key string, err error) error {
	switch st := statusOf(err); {
	case denied(err):
		return &DeniedError{Op: op, Bucket: s.bucket, Key: key, Status: st, Code: codeOf(err), Err: err}
	case noBucket(err):
		return fmt.Errorf("s3 %s %s: bucket %q (NoSuchBucket): %w", op, key, s.bucket, objstore.ErrNoBucket)
	case st == http.StatusNotFound || codeOf(err) == "NoSuchKey" || codeOf(err) == "NotFound":
		return fmt.Errorf("s3 %s %s: %w", op, key, objstore.ErrNotFound)
	case st >= 500 || st == http.StatusTooManyRequests:
		return fmt.Errorf("s3 %s %s: %w: %w", op, key, tidemark.ErrUnavailable, err)
	case st == 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("s3 %s %s: %w: %w", op, key, tidemark.ErrUnavailable, err)
	}
	return fmt.Errorf("s3 %s %s: %w", op, key, err)
}

func generationOf(md map[string]string) int64 {
	for k, v := range md {
		if strings.EqualFold(k, generationMeta) {
			g, _ := strconv.ParseInt(v, 10, 64)
			return g
		}
	}
	return 0
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string) (objstore.Object, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Object{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.full(key))})
	if err != nil {
		return objstore.Object{}, s.wrap("get", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("s3 get %s: %w: %w", key, tidemark.ErrUnavailable, err)
	}
	return objstore.Object{Info: objstore.Info{Key: key, ETag: aws.ToString(out.ETag), Generation: generationOf(out.Metadata), Size: int64(len(b))}, Body: b}, nil
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.full(key))})
	if err != nil {
		return objstore.Info{}, s.wrap("head", key, err)
	}
	return objstore.Info{Key: key, ETag: aws.ToString(out.ETag), Generation: generationOf(out.Metadata), Size: aws.ToInt64(out.ContentLength)}, nil
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Info{}, err
	}
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.full(key)),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		Metadata:      map[string]string{generationMeta: strconv.FormatInt(opt.Generation, 10)},
	}
	if opt.ContentType != "" {
		in.ContentType = aws.String(opt.ContentType)
	}
	conditional := opt.Cond.IfNoneMatch || opt.Cond.IfMatch != ""
	if opt.Cond.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if opt.Cond.IfMatch != "" {
		in.IfMatch = aws.String(opt.Cond.IfMatch)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		st := statusOf(err)
		if conditional && !noBucket(err) && (st == http.StatusPreconditionFailed || st == http.StatusNotFound || st == http.StatusConflict) {
			return objstore.Info{}, fmt.Errorf("s3 put %s (status %d): %w", key, st, objstore.ErrPrecondition)
		}
		return objstore.Info{}, s.wrap("put", key, err)
	}
	return objstore.Info{Key: key, ETag: aws.ToString(out.ETag), Generation: opt.Generation, Size: int64(len(body))}, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.full(key))})
	if err != nil && (statusOf(err) != http.StatusNotFound || noBucket(err)) {
		return s.wrap("delete", key, err)
	}
	return nil
}

// List implements objstore.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Info) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.full(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if err := fn(objstore.Info{Key: key, ETag: aws.ToString(o.ETag), Size: aws.ToInt64(o.Size)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// CreateBucket creates the bucket if it does not exist (for tests and
// first-time setup).
func (s *Store) CreateBucket(ctx context.Context) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.bucket})
	if err != nil && statusOf(err) != http.StatusConflict {
		return s.wrap("create bucket", s.bucket, err)
	}
	return nil
}

// Prefix is the key prefix the store writes under ("" or ending in "/").
func (s *Store) Prefix() string { return s.prefix }
