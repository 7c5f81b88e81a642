package benchmark

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ImageSource says where a task's container image comes from.
type ImageSource string

// Image sources, chosen by Harbor's rules (see ChooseImage).
const (
	// ImagePull runs the image task.toml names in [environment].docker_image.
	ImagePull ImageSource = "pull"
	// ImageBuild runs the image built from the task's environment/Dockerfile.
	ImageBuild ImageSource = "build"
	// ImageDefault runs the operator's default image: the task names no
	// image and ships no Dockerfile.
	ImageDefault ImageSource = "default"
)

// Environment is the pinned container image of one task in a manifest
// version, decided and resolved at sync. A run pins its manifest version and
// therefore its images: a tag that moves upstream changes Digest, which
// changes the manifest digest, which the next sync stores as a new version.
type Environment struct {
	Source ImageSource `json:"source"`
	// Image is the reference the task (or the operator, for ImageDefault)
	// states, as written: "alexgshaw/fix-git:20251031". Empty for builds.
	Image string `json:"image,omitempty"`
	// Pinned is the digest reference the sandbox runs
	// ("host/repo@sha256:…"); empty when the task is unavailable.
	Pinned string `json:"pinned,omitempty"`
	// Digest is the image manifest digest in Pinned ("sha256:…").
	Digest string `json:"digest,omitempty"`
	// BuildKey identifies a Dockerfile build: the sha256 of the build
	// context and the resolved digests of its FROM images. Equal keys
	// share one built image.
	BuildKey string `json:"build_key,omitempty"`
	// Bases are the FROM images of a build, pinned ("ref" → digest ref).
	Bases map[string]string `json:"bases,omitempty"`
	// BuildLog is the blob key of the build's log, kept for failed and
	// successful builds alike.
	BuildLog string `json:"build_log,omitempty"`
	// Unavailable, when set, says why the task's image cannot be had (it
	// names the task, the image and the cause); such a task is listed in a
	// run's unavailable tasks instead of being attempted.
	Unavailable string `json:"unavailable,omitempty"`
	// Preparing is set while the sync that stored the manifest version
	// still builds, pulls or unpacks the task's image: the task cannot be
	// attempted yet, and its item is rewritten once the image is ready (or
	// failed). A manifest version is stored as soon as every task's image is
	// decided, so a run may select the tasks that are ready while the
	// others build.
	Preparing bool `json:"preparing,omitempty"`
	// Failed says Unavailable is the outcome of preparing the image (a
	// failed build, pull or unpack), not of deciding it: the manifest
	// digest pins what goes in (sources, pinned references, build keys),
	// which is known before any build runs, so an outcome is left out of it.
	Failed bool `json:"failed,omitempty"`
	// Verifier is the image a separate verifier runs in ([verifier]
	// environment_mode = "separate"), built from the task's tests/ or
	// pulled, pinned like the task's own; nil for a shared verifier.
	Verifier *Environment `json:"verifier,omitempty"`
	// Services are the images of the task's sidecar services
	// (environment/docker-compose.yaml), by service name, each pinned as
	// the task's own is; their failures make the task Unavailable.
	Services map[string]Environment `json:"services,omitempty"`
	// Run is how a service of Services runs (set on those entries only).
	Run *ServiceRun `json:"run,omitempty"`
	// DependsOn is what the task's own container (compose's `main`)
	// waits for before the agent starts; set on a task's environment.
	DependsOn []ServiceDependency `json:"depends_on,omitempty"`
	// ServiceOrder names the services of Services in start order (every
	// service after the ones it depends on, ties by name).
	ServiceOrder []string `json:"service_order,omitempty"`
}

// TaskImageState is where a task's image is: ImagePreparing, ImageReady or
// ImageUnavailable.
type TaskImageState string

// Task image states.
const (
	ImagePreparing   TaskImageState = "preparing"
	ImageReady       TaskImageState = "ready"
	ImageUnavailable TaskImageState = "unavailable"
)

// State is where the environment's image is.
func (e *Environment) State() TaskImageState {
	switch {
	case e == nil:
		return ImageReady
	case e.Unavailable != "":
		return ImageUnavailable
	case e.Preparing:
		return ImagePreparing
	}
	return ImageReady
}

// StillPreparing is the reason given for a task whose image a sync is
// still preparing.
const StillPreparing = "its image is still being prepared (the benchmark's sync is building or pulling it); select it again once `gauntlet benchmark info` shows it ready"

// Available reports whether the task can be attempted: it has no
// environment record (a manifest synced without image preparation) or its
// image is pinned.
func (t Task) Available() bool { return t.Environment.State() == ImageReady }

// UnavailableReason is why the task cannot be attempted; "" when it can.
func (t Task) UnavailableReason() string {
	switch t.Environment.State() {
	case ImageUnavailable:
		return t.Environment.Unavailable
	case ImagePreparing:
		return fmt.Sprintf("task %s: %s", t.Name, StillPreparing)
	}
	return ""
}

// digestLine is what an environment adds to the manifest digest. A build's
// resulting image digest is left out on purpose: builds are not byte
// reproducible, and the build key already pins their inputs.
func (e *Environment) digestLine() string {
	if e == nil {
		return ""
	}
	pinned, unavailable := e.Pinned, e.Unavailable
	if e.Source == ImageBuild {
		pinned = ""
	}
	if e.Failed {
		unavailable = "" // an outcome, not an input (see Failed)
	}
	line := fmt.Sprintf("env %d:%s%d:%s%d:%s%d:%s", len(e.Source), e.Source, len(pinned), pinned, len(e.BuildKey), e.BuildKey, len(unavailable), unavailable)
	if e.Verifier != nil {
		// Only tasks with a separate verifier add to the line, so every
		// other manifest's digest stays what it was.
		line += " verifier " + e.Verifier.digestLine()
	}
	// Sidecar images, in name order; a task without any digests as before.
	for _, name := range slices.Sorted(maps.Keys(e.Services)) {
		svc := e.Services[name]
		line += fmt.Sprintf(" service %d:%s%s", len(name), name, svc.digestLine())
	}
	return line
}

// ServiceImages are the pinned images of the task's sidecar services, by
// service name (what a sandbox runs beside the task's image).
func (e *Environment) ServiceImages() map[string]string {
	if e == nil || len(e.Services) == 0 {
		return nil
	}
	out := make(map[string]string, len(e.Services))
	for name, svc := range e.Services {
		out[name] = svc.Pinned
	}
	return out
}

// ErrNoImage reports a task with no image, no Dockerfile and no operator
// default image.
var ErrNoImage = errors.New("no image")

// ChooseImage applies Harbor's rules to a task: a docker_image is pulled
// (unless forceBuild asks for a build and the task has a Dockerfile); else a
// Dockerfile is built; else the operator's default image runs. It returns
// the source and, for pulls and the default, the reference to resolve.
func ChooseImage(dockerImage string, hasDockerfile, forceBuild bool, defaultImage string) (ImageSource, string, error) {
	switch {
	case dockerImage != "" && !(forceBuild && hasDockerfile):
		return ImagePull, dockerImage, nil
	case hasDockerfile:
		return ImageBuild, "", nil
	case defaultImage != "":
		return ImageDefault, defaultImage, nil
	}
	return "", "", fmt.Errorf("%w: the task sets no [environment].docker_image and has no environment/Dockerfile, and the platform has no default image (set one in the platform config)", ErrNoImage)
}
