package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

var (
	nameAdjectives = []string{"amber", "brisk", "calm", "daring", "eager", "fuzzy", "gentle", "hardy", "icy", "jolly",
		"keen", "lucky", "mellow", "nimble", "opal", "plucky", "quiet", "rapid", "sunny", "tidy", "upbeat", "vivid", "witty", "zesty"}
	nameNouns = []string{"badger", "comet", "dolphin", "ember", "falcon", "glacier", "heron", "iris", "jaguar", "kestrel",
		"lynx", "meadow", "nebula", "otter", "pine", "quartz", "raven", "sparrow", "tundra", "urchin", "valley", "walrus", "yak", "zephyr"}
)

// runName derives a readable run name from the benchmark and the run id.
func runName(benchmarkKey, id string) string {
	sum := sha256.Sum256([]byte(id))
	n := binary.BigEndian.Uint64(sum[:8])
	adj := nameAdjectives[n%uint64(len(nameAdjectives))]
	noun := nameNouns[(n/uint64(len(nameAdjectives)))%uint64(len(nameNouns))]
	return fmt.Sprintf("%s-%s-%s-%02d", benchmarkKey, adj, noun, (n>>32)%100)
}
