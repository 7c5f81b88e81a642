// Package s3blob is the S3 adapter of the blob port.
//
// It is the S3 adapter of the blob port, with presigned URLs so
// sandboxes upload and clients download without platform credentials.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/gauntlet-bench/gauntlet/pkg/blob"
)

// PartSize is the multipart threshold and part size: objects larger than one
// part are uploaded in parts, so large artifacts never need one huge request.
const PartSize = 8 << 20

// Store implements blob.Store and blob.Presigner on one bucket.
type Store struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	partSz  int
}

var (
	_ blob.Store     = (*Store)(nil)
	_ blob.Presigner = (*Store)(nil)
)

// New returns the adapter for bucket.
func New(client *s3.Client, bucket string) *Store {
	return &Store{client: client, presign: s3.NewPresignClient(client), bucket: bucket, partSz: PartSize}
}

func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return fmt.Errorf("blob key %q: must be a relative slash-separated path", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("blob key %q: empty, '.' or '..' segment", key)
		}
	}
	return nil
}

// Put stores the reader's bytes, in one request or, past PartSize, as a
// multipart upload that is aborted on failure.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := checkKey(key); err != nil {
		return err
	}
	first := make([]byte, s.partSz)
	n, err := io.ReadFull(r, first)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(first[:n]), ContentLength: aws.Int64(int64(n))})
		if err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("put %s: read: %w", key, err)
	}
	return s.putMultipart(ctx, key, first, r)
}

func (s *Store) putMultipart(ctx context.Context, key string, first []byte, r io.Reader) (err error) {
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return fmt.Errorf("put %s: start multipart upload: %w", key, err)
	}
	defer func() {
		if err != nil {
			// A failed upload leaves no parts behind to be billed.
			_, _ = s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: up.UploadId})
		}
	}()
	var parts []types.CompletedPart
	buf := first
	for number := int32(1); ; number++ {
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &s.bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(number),
			Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		})
		if err != nil {
			return fmt.Errorf("put %s: part %d: %w", key, number, err)
		}
		// The SDK checksums every part by default; completing the upload must
		// repeat each part's checksum or S3 rejects the part list.
		parts = append(parts, types.CompletedPart{
			ETag: out.ETag, PartNumber: aws.Int32(number),
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
		})
		next := make([]byte, s.partSz)
		n, rerr := io.ReadFull(r, next)
		if n == 0 && (errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)) {
			break
		}
		if rerr != nil && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return fmt.Errorf("put %s: read: %w", key, rerr)
		}
		buf = next[:n]
	}
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return fmt.Errorf("put %s: complete multipart upload: %w", key, err)
	}
	return nil
}

// Get opens the object.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		var nsk *types.NoSuchKey
		var nf *types.NotFound
		if errors.As(err, &nsk) || errors.As(err, &nf) {
			return nil, fmt.Errorf("get %s: %w", key, blob.ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return out.Body, nil
}

// List returns every object under prefix, sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	var infos []blob.Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
		for _, o := range page.Contents {
			infos = append(infos, blob.Info{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	return infos, nil
}

// Delete removes the object; S3 deletes of missing keys succeed.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key}); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// PresignGet returns a URL that reads the object until ttl passes.
func (s *Store) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("presign get %s: %w", key, err)
	}
	return req.URL, nil
}

// PresignPut returns a URL that writes the object until ttl passes.
func (s *Store) PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("presign put %s: %w", key, err)
	}
	return req.URL, nil
}
