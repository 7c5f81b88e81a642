// Package codebuild is the cloud adapter of the sync's image-builder port
// (benchsync.ImageBuilder): a task's environment/Dockerfile is built by an
// AWS CodeBuild project and pushed to the platform's task-images ECR
// repository, tagged with the task's build key.
//
// The build key is the sha256 of the build context and the pinned bases, so
// a tag names exactly one image (the repository's tags are immutable) and
// the adapter is idempotent: before starting anything it asks ECR for the
// tag, and a redelivered sync whose build already pushed gets the recorded
// digest back without a second build. A build outlives the sync invocation
// that started it: Build answers benchsync.BuildRunning with the build id,
// and the sync's next delivery (its resume message carries the id) looks
// the build up. StartBuild carries the key as its idempotency token, so two
// syncs racing on one key within CodeBuild's token window start one build.
package codebuild

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codebuild"
	cbtypes "github.com/aws/aws-sdk-go-v2/service/codebuild/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrtypes "github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/dockerfile"
)

// CodeBuildAPI is the part of the CodeBuild client the builder uses.
type CodeBuildAPI interface {
	StartBuild(ctx context.Context, in *codebuild.StartBuildInput, opts ...func(*codebuild.Options)) (*codebuild.StartBuildOutput, error)
	BatchGetBuilds(ctx context.Context, in *codebuild.BatchGetBuildsInput, opts ...func(*codebuild.Options)) (*codebuild.BatchGetBuildsOutput, error)
	StopBuild(ctx context.Context, in *codebuild.StopBuildInput, opts ...func(*codebuild.Options)) (*codebuild.StopBuildOutput, error)
}

// ECRAPI is the part of the ECR client the builder uses.
type ECRAPI interface {
	DescribeImages(ctx context.Context, in *ecr.DescribeImagesInput, opts ...func(*ecr.Options)) (*ecr.DescribeImagesOutput, error)
}

// Contexts stores the zipped build contexts CodeBuild reads.
type Contexts interface {
	Put(ctx context.Context, key string, r io.Reader) error
}

// Config names what the CDK stack created (infra/sandbox).
type Config struct {
	Project string // CodeBuild project name (GAUNTLET_IMAGE_BUILD_PROJECT)
	// Repository is the task-images repository's name, RepositoryURI its
	// "<account>.dkr.ecr.<region>.amazonaws.com/<name>".
	Repository, RepositoryURI string
	// Bucket is where Contexts puts objects; CodeBuild's S3 source is
	// "<bucket>/<key>".
	Bucket   string
	Contexts Contexts
	// Poll is how often a running build is checked (default 10 s).
	Poll time.Duration
	// Wait is how long one Build waits for the build it started before
	// answering benchsync.BuildRunning (zero: not at all, so every
	// Dockerfile task of a sync starts building at once and no build is
	// waited on inside a Lambda invocation).
	Wait time.Duration
	// BaseRef maps a pinned base image (a FROM of the request's Dockerfile,
	// "docker.io/library/python@sha256:…") to where the build pulls it: the
	// ECR pull-through prefix of its registry, so a build never meets
	// Docker Hub's or GHCR's rate limits and pulls exactly the digest the
	// build key names. Nil pulls the bases as written.
	BaseRef func(pinned string) string
}

// Builder implements benchsync.ImageBuilder with CodeBuild.
type Builder struct {
	cb  CodeBuildAPI
	ecr ECRAPI
	cfg Config
}

var _ benchsync.ImageBuilder = (*Builder)(nil)

// ImageTagEnv is the build's variable naming the tag to push (the buildspec
// of infra/sandbox pushes $REPOSITORY_URI:$IMAGE_TAG).
const ImageTagEnv = "IMAGE_TAG"

// ContextKey is the blob key of a build key's zipped context.
func ContextKey(key string) string { return "builds/" + key + "/context.zip" }

// New returns a builder; it checks the configuration and calls nothing.
func New(cb CodeBuildAPI, ecrc ECRAPI, cfg Config) (*Builder, error) {
	switch {
	case cfg.Project == "":
		return nil, errors.New("codebuild builder: project is empty (GAUNTLET_IMAGE_BUILD_PROJECT)")
	case cfg.Repository == "" || cfg.RepositoryURI == "":
		return nil, errors.New("codebuild builder: task-images repository is empty (GAUNTLET_TASK_IMAGES_REPOSITORY)")
	case cfg.Bucket == "" || cfg.Contexts == nil:
		return nil, errors.New("codebuild builder: no bucket for build contexts (GAUNTLET_BUCKET)")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 10 * time.Second
	}
	return &Builder{cb: cb, ecr: ecrc, cfg: cfg}, nil
}

// Build returns the digest reference of req's image, building and pushing
// it only when the repository has no image tagged with its build key.
//
// A build runs in CodeBuild for as long as it takes (up to req.Timeout,
// CodeBuild's own limit): Build waits for it at most Config.Wait and then
// answers *benchsync.BuildRunning with the build's id, which the sync
// parks on and hands back as req.Running on its next delivery; Build then
// looks that build up instead of starting another.
func (b *Builder) Build(ctx context.Context, req benchsync.BuildRequest) (string, error) {
	if len(req.Key) != 64 || !isLowerHex(req.Key) {
		return "", fmt.Errorf("task %s: build key %q is not 64 lowercase hex characters", req.Task, req.Key)
	}
	logw := req.Log
	if logw == nil {
		logw = io.Discard
	}
	if ref, err := b.pushed(ctx, req.Key); err != nil || ref != "" {
		if ref != "" {
			fmt.Fprintf(logw, "image for build key %s is already in %s: %s (not rebuilt)\n", req.Key, b.cfg.Repository, ref)
		}
		return ref, err
	}
	if req.Running != "" {
		build, found, err := b.get(ctx, req.Running)
		switch {
		case err != nil:
			return "", fmt.Errorf("task %s: image build %s: %w", req.Task, req.Running, err)
		case found && !build.BuildComplete:
			return "", &benchsync.BuildRunning{Handle: req.Running}
		case found:
			return b.finished(ctx, req, build, logw)
		}
		fmt.Fprintf(logw, "CodeBuild no longer knows build %s; starting another\n", req.Running)
	}
	id, err := b.start(ctx, req)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(logw, "CodeBuild %s building %s:%s\n", id, b.cfg.RepositoryURI, req.Key)
	if b.cfg.Wait <= 0 {
		return "", &benchsync.BuildRunning{Handle: id}
	}
	build, done, err := b.wait(ctx, id)
	switch {
	case err != nil:
		return "", fmt.Errorf("task %s: image build %s: %w", req.Task, id, err)
	case !done:
		return "", &benchsync.BuildRunning{Handle: id}
	}
	return b.finished(ctx, req, build, logw)
}

// start uploads the context and starts the build; it returns the build id.
func (b *Builder) start(ctx context.Context, req benchsync.BuildRequest) (string, error) {
	df, err := b.mirrored(req.Dockerfile)
	if err != nil {
		return "", fmt.Errorf("task %s: %w", req.Task, err)
	}
	zipped, err := zipContext(req.ContextDir, df)
	if err != nil {
		return "", fmt.Errorf("task %s: build context: %w", req.Task, err)
	}
	if err := b.cfg.Contexts.Put(ctx, ContextKey(req.Key), bytes.NewReader(zipped)); err != nil {
		return "", fmt.Errorf("task %s: store build context: %w", req.Task, err)
	}
	in := &codebuild.StartBuildInput{
		ProjectName:            aws.String(b.cfg.Project),
		SourceTypeOverride:     cbtypes.SourceTypeS3,
		SourceLocationOverride: aws.String(b.cfg.Bucket + "/" + ContextKey(req.Key)),
		EnvironmentVariablesOverride: []cbtypes.EnvironmentVariable{
			{Name: aws.String(ImageTagEnv), Value: aws.String(req.Key), Type: cbtypes.EnvironmentVariableTypePlaintext},
		},
		// CodeBuild's token allows 64 characters, a build key is 64.
		IdempotencyToken: aws.String(req.Key),
	}
	if m := TimeoutMinutes(req.Timeout); m > 0 {
		in.TimeoutInMinutesOverride = aws.Int32(m)
	}
	out, err := b.cb.StartBuild(ctx, in)
	if err != nil {
		return "", fmt.Errorf("task %s: start image build: %w", req.Task, err)
	}
	return aws.ToString(out.Build.Id), nil
}

// TimeoutMinutes is CodeBuild's timeout for a build limit d: whole minutes
// rounded up, within CodeBuild's 5..2160; 0 (the project's own timeout)
// when d is zero.
func TimeoutMinutes(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	m := (d + time.Minute - 1) / time.Minute
	return int32(min(max(m, 5), 2160))
}

// finished turns a completed build into the image or the reason there is
// none. The tag decides: a build that failed because another build of the
// same key pushed first (the repository's tags are immutable) still has
// its image.
func (b *Builder) finished(ctx context.Context, req benchsync.BuildRequest, build cbtypes.Build, logw io.Writer) (string, error) {
	id := aws.ToString(build.Id)
	ref, err := b.pushed(ctx, req.Key)
	switch {
	case err != nil:
		return "", fmt.Errorf("task %s: %w", req.Task, err)
	case ref != "":
		fmt.Fprintf(logw, "CodeBuild %s ended %s; pushed %s\n", id, build.BuildStatus, ref)
		return ref, nil
	case build.BuildStatus == cbtypes.StatusTypeSucceeded:
		return "", fmt.Errorf("task %s: image build %s succeeded but %s has no image tagged %s", req.Task, id, b.cfg.Repository, req.Key)
	case build.BuildStatus == cbtypes.StatusTypeTimedOut:
		return "", fmt.Errorf("task %s: image build %s exceeded its %d min limit%s: %w", req.Task, id, aws.ToInt32(build.TimeoutInMinutes), failure(build, logw), benchsync.ErrBuildTimedOut)
	}
	return "", fmt.Errorf("task %s: image build %s ended %s%s", req.Task, id, build.BuildStatus, failure(build, logw))
}

// get looks a build up; found is false when CodeBuild no longer knows it.
func (b *Builder) get(ctx context.Context, id string) (cbtypes.Build, bool, error) {
	out, err := b.cb.BatchGetBuilds(ctx, &codebuild.BatchGetBuildsInput{Ids: []string{id}})
	if err != nil {
		return cbtypes.Build{}, false, fmt.Errorf("poll: %w", err)
	}
	if len(out.Builds) == 0 {
		return cbtypes.Build{}, false, nil
	}
	return out.Builds[0], true, nil
}

// mirrored rewrites every FROM of the pinned Dockerfile to BaseRef of its
// image. A base that is not a digest reference is refused: the build key
// names digests, and a tag would let the build pull something else.
func (b *Builder) mirrored(df []byte) ([]byte, error) {
	bases, err := dockerfile.Bases(df)
	if err != nil {
		return nil, fmt.Errorf("pinned Dockerfile: %w", err)
	}
	refs := make(map[string]string, len(bases))
	for _, base := range bases {
		if !strings.Contains(base.Image, "@sha256:") {
			return nil, fmt.Errorf("pinned Dockerfile: line %d: FROM %s is not pinned to a digest", base.Line, base.Image)
		}
		refs[base.Image] = base.Image
		if b.cfg.BaseRef != nil {
			refs[base.Image] = b.cfg.BaseRef(base.Image)
		}
	}
	out, err := dockerfile.Pin(df, refs)
	if err != nil {
		return nil, fmt.Errorf("pinned Dockerfile: %w", err)
	}
	return out, nil
}

// wait polls the build until it completes (done) or Config.Wait passes
// (not done: it runs on); a cancelled wait stops it, so an abandoned sync
// leaves no build running.
func (b *Builder) wait(ctx context.Context, id string) (cbtypes.Build, bool, error) {
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	budget := time.NewTimer(b.cfg.Wait)
	defer budget.Stop()
	for {
		build, found, err := b.get(ctx, id)
		if err != nil && ctx.Err() == nil {
			return cbtypes.Build{}, false, err
		}
		if err == nil {
			if !found {
				return cbtypes.Build{}, false, errors.New("CodeBuild no longer knows the build")
			}
			if build.BuildComplete {
				return build, true, nil
			}
		}
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = b.cb.StopBuild(stopCtx, &codebuild.StopBuildInput{Id: aws.String(id)})
			cancel()
			return cbtypes.Build{}, false, fmt.Errorf("stopped waiting (build stopped): %w", ctx.Err())
		case <-budget.C:
			return cbtypes.Build{}, false, nil
		case <-tick.C:
		}
	}
}

// pushed returns the digest reference of the image tagged key, or "".
func (b *Builder) pushed(ctx context.Context, key string) (string, error) {
	out, err := b.ecr.DescribeImages(ctx, &ecr.DescribeImagesInput{
		RepositoryName: aws.String(b.cfg.Repository),
		ImageIds:       []ecrtypes.ImageIdentifier{{ImageTag: aws.String(key)}},
	})
	var missing *ecrtypes.ImageNotFoundException
	switch {
	case errors.As(err, &missing):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("look up image %s:%s: %w", b.cfg.Repository, key, err)
	case len(out.ImageDetails) == 0 || aws.ToString(out.ImageDetails[0].ImageDigest) == "":
		return "", nil
	}
	return b.cfg.RepositoryURI + "@" + aws.ToString(out.ImageDetails[0].ImageDigest), nil
}

// failure says which phase failed and where the log is, and writes it to
// the build log too.
func failure(build cbtypes.Build, logw io.Writer) string {
	var msg []string
	for _, p := range build.Phases {
		if p.PhaseStatus != cbtypes.StatusTypeSucceeded && p.PhaseStatus != "" {
			detail := string(p.PhaseType) + " " + string(p.PhaseStatus)
			for _, c := range p.Contexts {
				if m := aws.ToString(c.Message); m != "" {
					detail += ": " + m
				}
			}
			msg = append(msg, detail)
		}
	}
	if build.Logs != nil && aws.ToString(build.Logs.DeepLink) != "" {
		msg = append(msg, "log: "+aws.ToString(build.Logs.DeepLink))
	}
	if len(msg) == 0 {
		return ""
	}
	fmt.Fprintln(logw, strings.Join(msg, "\n"))
	return " (" + strings.Join(msg, "; ") + ")"
}

// zipContext zips the build context with the pinned Dockerfile in place of
// the task's own. Symlinks are stored as links (CodeBuild unzips them so);
// nothing outside dir is read.
func zipContext(dir string, dockerfile []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." || d.IsDir() {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "Dockerfile" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Method = rel, zip.Deflate
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			_, err = io.WriteString(w, target)
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", rel)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	w, err := zw.Create("Dockerfile")
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(dockerfile); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isLowerHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// StopBuilds stops the CodeBuild builds with these ids (the handles a
// parked sync holds), as benchsync.BuildStopper: a removed benchmark's
// builds stop instead of running to their end. A build that already ended
// is no error (CodeBuild answers StopBuild on it with the build as it is).
func (b *Builder) StopBuilds(ctx context.Context, ids []string) error {
	var errs []error
	for _, id := range ids {
		if _, err := b.cb.StopBuild(ctx, &codebuild.StopBuildInput{Id: aws.String(id)}); err != nil {
			errs = append(errs, fmt.Errorf("stop image build %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

var _ benchsync.BuildStopper = (*Builder)(nil)
